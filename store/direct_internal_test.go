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
