package store

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpreadListsAsGormDoes(t *testing.T) {
	t.Parallel()
	q, args := spread(`SELECT 1 WHERE a = ? AND b IN ? AND c = ?`, []any{1, []string{"x", "y"}, "z"})
	require.Equal(t, `SELECT 1 WHERE a = ? AND b IN (?, ?) AND c = ?`, q)
	require.Equal(t, []any{1, "x", "y", "z"}, args)

	q, args = spread(`SELECT 1 WHERE b IN ?`, []any{[]string(nil)})
	require.Equal(t, `SELECT 1 WHERE b IN (NULL)`, q)
	require.Empty(t, args)

	plain := []any{1, "two"}
	q, args = spread(`SELECT ?, ?`, plain)
	require.Equal(t, `SELECT ?, ?`, q)
	require.Equal(t, plain, args)
}

// A LIMIT bound to a bare parameter makes SQLite compile the statement
// again on every use; SQLite gets it as +?, which limits the same.
func TestSQLiteSQLHidesTheLimitFromThePlanner(t *testing.T) {
	t.Parallel()
	q, args := sqliteSQL(`SELECT id FROM runs WHERE kind IN ? ORDER BY id LIMIT ?`, []any{[]string{"a", "b"}, 3})
	require.Equal(t, `SELECT id FROM runs WHERE kind IN (?, ?) ORDER BY id LIMIT +?`, q)
	require.Equal(t, []any{"a", "b", 3}, args)

	ctx := context.Background()
	st, err := Open(ctx, Options{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "limit.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	type n struct{ V int64 }
	got, err := queryAll(st.r.WithContext(ctx), `WITH RECURSIVE c(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM c WHERE v < 10)
		SELECT v FROM c ORDER BY v LIMIT ?`, []any{3}, func(x *n) []any { return []any{&x.V} })
	require.NoError(t, err)
	require.Equal(t, []n{{1}, {2}, {3}}, got)
}

// Lists spread cannot bind go through gorm.
func TestPlainArgs(t *testing.T) {
	t.Parallel()
	require.True(t, plainArgs([]any{1, "x", []string{"a"}, []byte("b"), nil}))
	require.False(t, plainArgs([]any{1, []int64{2, 3}}))
}

// The store's hot statements skip gorm on SQLite, and give the same
// answers as through gorm, IN lists included; with SQL traced at debug
// level they go through gorm, whose trace shows them.
func TestRowSkipsGormUnlessTraced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, traced := range []bool{false, true} {
		var logs bytes.Buffer
		level := slog.LevelInfo
		if traced {
			level = slog.LevelDebug
		}
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
		st, err := Open(ctx, Options{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "row.db"), Logger: log})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		require.Equal(t, !traced, direct(st.r.WithContext(ctx)))

		var n int
		require.NoError(t, row(st.r.WithContext(ctx), `SELECT COUNT(*) FROM (SELECT 'a' AS p UNION ALL SELECT 'b' UNION ALL SELECT 'c')
			WHERE p IN ? AND ? = 1`, []string{"a", "c"}, 1).Scan(&n))
		require.Equal(t, 2, n)
		require.Equal(t, traced, bytes.Contains(logs.Bytes(), []byte("UNION ALL")), "traced: %v\n%s", traced, logs.String())
	}
}
