package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

var probeT0 = time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)

// openAt opens and migrates a SQLite store at dsn on clock.
func openAt(t *testing.T, dsn string, clock *coretest.Clock) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: dsn, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(context.Background()))
	return st
}

func probedAt(t *testing.T, st *store.Store) string {
	t.Helper()
	var at string
	require.NoError(t, st.DB().Raw(`SELECT CAST(probed_at AS TEXT) FROM store_probe WHERE id = 1`).Row().Scan(&at))
	return at
}

// The health check writes at most once per interval and keeps the result
// in between; on both stores.
func TestHealthCheckProbesAtMostEvery10s(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) *store.Store{
		"sqlite":   storetest.OpenSQLite,
		"postgres": storetest.OpenPostgres,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			require.NoError(t, st.Migrate(context.Background()))
			ctx := context.Background()
			h := store.NewHealthCheck(st, 0)
			require.NoError(t, h.Check(ctx))
			first := probedAt(t, st)
			require.NoError(t, h.Check(ctx))
			require.Equal(t, first, probedAt(t, st), "kept, not written again")
			require.NoError(t, st.ProbeWrite(ctx))
			require.NoError(t, st.DB().Exec(`DELETE FROM store_probe`).Error)
			require.NoError(t, h.Check(ctx), "the result is kept for 10 s")
		})
	}
}

// A database that reads but cannot write: ping passes, the probe fails
// and says why. SQLite's mode=ro opens the file as it opens one the
// process may not write (which root, who runs CI, may always write).
func TestHealthCheckFailsOnAReadOnlyDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "parley.db")
	clock := coretest.NewClock(probeT0)
	rw, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: file})
	require.NoError(t, err)
	require.NoError(t, rw.Migrate(context.Background()))
	require.NoError(t, rw.Close())

	ro := openAt(t, "file:"+file+"?mode=ro", clock)
	require.NoError(t, ro.Ping(context.Background()))
	h := store.NewHealthCheck(ro, 10*time.Second)
	err = h.Check(context.Background())
	require.Error(t, err)
	require.Equal(t, "the store cannot write: sqlite "+file+": store.dsn opens the database read-only (mode=ro) "+
		"(attempt to write a readonly database)", err.Error())
	var se *store.StorageError
	require.True(t, errors.As(err, &se))
	require.Equal(t, "sqlite "+file, se.Where)

	// The failure is kept for 10 s, then probed anew.
	require.Equal(t, err.Error(), h.Check(context.Background()).Error())
	clock.Advance(10 * time.Second)
	require.Error(t, h.Check(context.Background()))
}

// Errors opening a database name the file and say what is wrong with
// where it is, not just "unable to open database file".
func TestOpenErrorsNameThePathAndTheCause(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Repeat("not a database\n", 300)), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "db.sqlite"), 0o700))
	for _, tc := range []struct{ dsn, want string }{
		{filepath.Join(dir, "missing", "parley.db"),
			"sqlite " + filepath.Join(dir, "missing", "parley.db") + ": the directory " + filepath.Join(dir, "missing") +
				" does not exist: create it, or point store.dsn elsewhere (opening sqlite store: unable to open database file: no such file or directory)"},
		{filepath.Join(dir, "notes.txt", "parley.db"),
			"sqlite " + filepath.Join(dir, "notes.txt", "parley.db") + ": " + filepath.Join(dir, "notes.txt") +
				" is a file, not a directory: " + filepath.Join(dir, "notes.txt", "parley.db") + " cannot be under it"},
		{filepath.Join(dir, "notes.txt", "deeper", "parley.db"),
			filepath.Join(dir, "notes.txt") + " is a file, not a directory: " + filepath.Join(dir, "notes.txt", "deeper", "parley.db") + " cannot be under it"},
		{filepath.Join(dir, "db.sqlite"), filepath.Join(dir, "db.sqlite") + " is a directory, not a database file"},
		{filepath.Join(dir, "notes.txt"), filepath.Join(dir, "notes.txt") + " is not a SQLite database: store.dsn names another file"},
	} {
		_, err := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: tc.dsn})
		if err == nil {
			// Some are found only when the database is first read.
			st, _ := store.Open(context.Background(), store.Options{Driver: store.DriverSQLite, DSN: tc.dsn})
			err = st.Migrate(context.Background())
			_ = st.Close()
		}
		require.Error(t, err, tc.dsn)
		require.Contains(t, store.Explain(store.DriverSQLite, tc.dsn, err).Error(), tc.want, tc.dsn)
	}
}

func TestExplainPostgres(t *testing.T) {
	t.Parallel()
	dsn := "postgres://parley:hunter2@db.internal:5432/parley"
	for msg, want := range map[string]string{
		"ERROR: cannot execute INSERT in a read-only transaction (SQLSTATE 25006)": "the server takes no writes",
		"ERROR: could not extend file: No space left on device (SQLSTATE 53100)":   "the database server's disk is full",
		"dial tcp 10.0.0.5:5432: connect: connection refused":                      "nothing answers at the host and port in store.dsn",
	} {
		err := store.Explain(store.DriverPostgres, dsn, errors.New(msg))
		require.Equal(t, "postgres db.internal:5432/parley: "+want, err.Error()[:len("postgres db.internal:5432/parley: ")+len(want)])
		require.NotContains(t, err.Error(), "hunter2")
	}
}
