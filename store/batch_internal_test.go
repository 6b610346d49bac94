package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
)

func openBatchTest(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), Options{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "batch.db")})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, st.w.Exec(`CREATE TABLE t (v TEXT NOT NULL)`).Error)
	return st
}

func insert(v string, fail error) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error {
		if err := tx.Exec(`INSERT INTO t (v) VALUES (?)`, v).Error; err != nil {
			return err
		}
		return fail
	}
}

func rows(t *testing.T, st *Store) []string {
	t.Helper()
	var out []string
	require.NoError(t, st.r.Raw(`SELECT v FROM t ORDER BY rowid`).Scan(&out).Error)
	return out
}

// A failing op in a batch rolls back its own writes only.
func TestBatchIsolatesAFailingOp(t *testing.T) {
	t.Parallel()
	st := openBatchTest(t)
	boom := errors.New("boom")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	ops := []*writeOp{
		{ctx: context.Background(), fn: insert("a", nil), err: make(chan error, 1)},
		{ctx: context.Background(), fn: insert("b", boom), err: make(chan error, 1)},
		{ctx: canceled, fn: insert("c", nil), err: make(chan error, 1)},
		{ctx: context.Background(), fn: insert("d", nil), err: make(chan error, 1)},
	}
	st.batch.run(ops)
	require.NoError(t, <-ops[0].err)
	require.ErrorIs(t, <-ops[1].err, boom)
	require.ErrorIs(t, <-ops[2].err, context.Canceled)
	require.NoError(t, <-ops[3].err)
	require.Equal(t, []string{"a", "d"}, rows(t, st))
}

// A lone op runs as a plain transaction: its failure rolls it back.
func TestBatchOfOne(t *testing.T) {
	t.Parallel()
	st := openBatchTest(t)
	boom := errors.New("boom")
	require.ErrorIs(t, st.write(context.Background(), insert("x", boom)), boom)
	require.NoError(t, st.write(context.Background(), insert("y", nil)))
	require.Equal(t, []string{"y"}, rows(t, st))
}

// Many concurrent writers all land, once each.
func TestBatchConcurrentWriters(t *testing.T) {
	t.Parallel()
	st := openBatchTest(t)
	const n = 200
	errs := make(chan error, n)
	for i := range n {
		go func() { errs <- st.write(context.Background(), insert(string(rune('A'+i%26)), nil)) }()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	require.Len(t, rows(t, st), n)
}

// Writes after Close fail instead of hanging.
func TestBatchAfterClose(t *testing.T) {
	t.Parallel()
	st, err := Open(context.Background(), Options{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "closed.db")})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.ErrorIs(t, st.write(context.Background(), insert("z", nil)), errClosed)
}
