package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for schema setup
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/internal/testskip"
	"github.com/parleybot/parley/store"
)

// PostgresEnv names the PostgreSQL tests may use, e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const PostgresEnv = "PARLEY_TEST_POSTGRES_DSN"

// OpenSQLite opens an unmigrated store on a new file in t.TempDir(), closed
// at cleanup.
func OpenSQLite(t testing.TB) *store.Store {
	t.Helper()
	return open(t, store.DriverSQLite, filepath.Join(t.TempDir(), "parley.db"))
}

// OpenPostgres opens an unmigrated store on a schema of its own (see
// PostgresDSN). It skips t when PostgresEnv is unset.
func OpenPostgres(t testing.TB) *store.Store {
	t.Helper()
	return open(t, store.DriverPostgres, PostgresDSN(t))
}

// PostgresDSN creates a schema of its own in the database PostgresEnv
// names, drops it at cleanup, and returns a DSN whose search_path is that
// schema, so parallel tests never see each other's rows. It skips t when
// PostgresEnv is unset. Close what uses the DSN in a cleanup registered
// after this call, so it runs before the drop.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		NeedPostgres(t)
	}
	var b [8]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	schema := "parley_test_" + hex.EncodeToString(b[:])

	admin, err := sql.Open("pgx", base)
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	_, err = admin.ExecContext(context.Background(), "CREATE SCHEMA "+schema)
	require.NoError(t, err)
	// pgvector, where the server has it, lives in public for every test:
	// created from a test's own schema, it would go with that schema.
	// Tests creating it at once may race; whoever loses finds it made.
	_, _ = admin.ExecContext(context.Background(), `DO $$ BEGIN
		IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
			CREATE EXTENSION IF NOT EXISTS vector SCHEMA public;
		END IF; END $$`)
	t.Cleanup(func() {
		_, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		require.NoError(t, err)
	})
	return WithSearchPath(base, schema)
}

// OpenPostgresAt opens an unmigrated store on dsn (from PostgresDSN), closed
// at cleanup: several stores on one schema are several replicas.
func OpenPostgresAt(t testing.TB, dsn string) *store.Store {
	t.Helper()
	return open(t, store.DriverPostgres, dsn)
}

func open(t testing.TB, driver, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Driver: driver, DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

// WithSearchPath adds search_path (a runtime parameter pgx passes to the
// server) to a URL or key=value DSN.
func WithSearchPath(dsn, schema string) string {
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "search_path=" + url.QueryEscape(schema)
	}
	return dsn + " search_path=" + schema
}

// NeedPostgres skips t when PostgresEnv is unset, and tells the person at
// the terminal once a run what was skipped and how to run it.
func NeedPostgres(t testing.TB) {
	t.Helper()
	if os.Getenv(PostgresEnv) == "" {
		testskip.Skip(t, "PostgreSQL (every case on PostgreSQL)",
			"set "+PostgresEnv+"='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' to a database they may use")
	}
}
