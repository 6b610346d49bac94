//go:build linux

package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/store"
)

// mountTmpfs mounts a tmpfs of size bytes for the test: a file system
// that can be filled, or made read-only, for real, which file modes
// cannot do for root (CI runs as root). It skips t where mounting is not
// allowed (no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mounting a tmpfs needs CAP_SYS_ADMIN (root on CI): %v", err)
	}
	t.Cleanup(func() { require.NoError(t, syscall.Unmount(dir, syscall.MNT_DETACH)) })
	return dir
}

func remountReadOnly(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
}

// A database in a directory on a read-only file system: the error names
// the directory and says it is mounted read-only, root or not.
func TestOpenOnAReadOnlyFileSystem(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "4m")
	remountReadOnly(t, dir)
	file := filepath.Join(dir, "parley.db")
	_, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: file})
	require.Error(t, err)
	require.Equal(t, "sqlite "+file+": the directory "+dir+" is not writable (read-only file system): SQLite creates "+
		"parley.db-wal and -shm there; the file system is mounted read-only (opening sqlite store: unable to open database file: "+
		"no such file or directory)", store.Explain(store.DriverSQLite, file, err).Error())
}

// An existing database whose file system became read-only: found when
// opening or at the latest by the write probe, and explained.
func TestExistingDatabaseOnAReadOnlyFileSystem(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "8m")
	file := filepath.Join(dir, "parley.db")
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: file})
	require.NoError(t, err)
	require.NoError(t, st.Migrate(ctx))
	require.NoError(t, st.Close())
	remountReadOnly(t, dir)

	st, err = store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: file})
	if err == nil {
		defer st.Close()
		if err = st.Migrate(ctx); err == nil {
			err = st.ProbeWrite(ctx)
		}
	}
	require.Error(t, err)
	msg := store.Explain(store.DriverSQLite, file, err).Error()
	require.Contains(t, msg, "sqlite "+file+": ")
	require.Contains(t, msg, "the file system is mounted read-only")
}

// A full disk: pings and reads pass, the write probe fails and /healthz
// says the disk is full; once there is room, the next probe passes.
func TestHealthCheckFailsOnAFullDisk(t *testing.T) {
	t.Parallel()
	dir := mountTmpfs(t, "8m")
	file := filepath.Join(dir, "parley.db")
	clock := coretest.NewClock(probeT0)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: file, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx))
	h := store.NewHealthCheck(st, 10*time.Second)
	require.NoError(t, h.Check(ctx))
	// The write-ahead log starts empty, as after a checkpoint: the next
	// write must grow it, as a new message does.
	require.NoError(t, st.DB().Exec(`PRAGMA wal_checkpoint(TRUNCATE)`).Error)

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	chunk := make([]byte, 64<<10)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
	for err == nil || errors.Is(err, syscall.ENOSPC) {
		// Fill the last partial block too.
		if _, err = f.Write(chunk[:512]); err != nil {
			break
		}
	}
	require.NoError(t, f.Close())

	clock.Advance(10 * time.Second)
	require.NoError(t, st.Ping(ctx))
	err = h.Check(ctx)
	require.Error(t, err)
	require.Equal(t, "the store cannot write: sqlite "+file+": the disk holding "+dir+" is full (0 B free): free some space "+
		"(database or disk is full)", err.Error())

	require.NoError(t, os.Remove(filler))
	clock.Advance(10 * time.Second)
	require.NoError(t, h.Check(ctx))
}
