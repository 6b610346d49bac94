// Package diskfaulttest gives a test a small file system it can fill for
// real: a tmpfs mounted for the test. Where mounting is not allowed (not
// root, no CAP_SYS_ADMIN) it falls back, loudly, to an ordinary directory
// and a diskfault.Disk that the code under test is handed, whose writes
// then fail with ENOSPC while the test keeps the disk full. Nothing is
// skipped either way. PARLEY_TEST_DISK=inject forces the fallback, to run
// that path where mounting works.
package diskfaulttest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/internal/diskfault"
)

// Disk is a small file system for one test.
type Disk struct {
	// Dir is its root.
	Dir string
	// Fault is non-nil only when no file system could be mounted: hand it
	// to the code under test (store.Options.Disk, spool.Config.Disk).
	Fault *diskfault.Disk
	// filler holds the bytes that fill a mounted disk.
	filler string
}

// New mounts a tmpfs of size ("8m") for t, unmounted when t ends, or falls
// back to an injected full disk (see the package comment) and says so.
func New(t testing.TB, size string) *Disk {
	t.Helper()
	dir := t.TempDir()
	var unmount func() error
	err := errors.New("PARLEY_TEST_DISK=inject")
	if os.Getenv("PARLEY_TEST_DISK") != "inject" {
		unmount, err = mount(dir, size)
	}
	if err != nil {
		msg := "!!! NO REAL FULL DISK: mounting a " + size + " tmpfs failed (" + err.Error() +
			"); falling back to an injected ENOSPC in the writes of the code under test (the store, the inbound spool). Run as root " +
			"(or with CAP_SYS_ADMIN) to test a file system that really fills up."
		if os.Getenv("CI") != "" {
			msg += " CI is set: the test runs on, with the injected fault, and is not skipped."
		}
		t.Log(msg)
		return &Disk{Dir: dir, Fault: &diskfault.Disk{}}
	}
	t.Cleanup(func() { require.NoError(t, unmount()) })
	return &Disk{Dir: dir, filler: filepath.Join(dir, "filler")}
}

// Mounted reports whether Dir is a real file system that fills up.
func (d *Disk) Mounted() bool { return d.Fault == nil }

// Fill fills the disk: every byte of a mounted one is taken by a filler
// file, down to the last block; an injected one starts failing writes.
func (d *Disk) Fill(t testing.TB) {
	t.Helper()
	if d.Fault != nil {
		d.Fault.SetFull(true)
		return
	}
	f, err := os.OpenFile(d.filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for _, n := range []int{len(chunk), 4096, 512, 1} {
		for {
			if _, err = f.Write(chunk[:n]); err != nil {
				break
			}
		}
		require.True(t, errors.Is(err, syscall.ENOSPC), "filling %s: %v", d.Dir, err)
	}
}

// Free gives the space back.
func (d *Disk) Free(t testing.TB) {
	t.Helper()
	if d.Fault != nil {
		d.Fault.SetFull(false)
		return
	}
	require.NoError(t, os.Remove(d.filler))
}
