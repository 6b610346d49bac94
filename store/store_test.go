package store_test

import (
	"fmt"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// postgresEnv names the PostgreSQL the tests may use, e.g.
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
const postgresEnv = storetest.PostgresEnv

func TestSQLite(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, openSQLite)
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	storetest.NeedPostgres(t)
	storetest.Exercise(t, openPostgres)
}

// openSQLite opens a store on a new file in t.TempDir().
func openSQLite(t *testing.T) *store.Store { return storetest.OpenSQLite(t) }

// openPostgres opens a store on a schema of its own.
func openPostgres(t *testing.T) *store.Store { return storetest.OpenPostgres(t) }

func openDSN(t *testing.T, driver, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), store.Options{Driver: driver, DSN: dsn})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return st
}

func TestPostgresErrorHidesPassword(t *testing.T) {
	t.Parallel()
	const password = "s3cr3t-Pa55word"
	dsns := []string{
		// Nothing listens on port 1: the connection is refused.
		"postgres://parley:" + password + "@127.0.0.1:1/parley?sslmode=disable&connect_timeout=5",
		"host=127.0.0.1 port=1 user=parley password=" + password + " dbname=parley sslmode=disable connect_timeout=5",
		// Malformed: the port is not a number.
		"postgres://parley:" + password + "@127.0.0.1:notaport/parley",
		"postgres://parley:" + url.QueryEscape(password+"/?#") + "@127.0.0.1:1/parley?sslmode=disable&connect_timeout=5",
	}
	for _, dsn := range dsns {
		st, err := store.Open(t.Context(), store.Options{Driver: store.DriverPostgres, DSN: dsn})
		require.Nil(t, st)
		require.Error(t, err)
		require.Contains(t, err.Error(), "opening postgres store")
		require.NotContains(t, err.Error(), password)
		require.NotContains(t, err.Error(), url.QueryEscape(password))
	}
}

func TestOpenUnknownDriver(t *testing.T) {
	t.Parallel()
	_, err := store.Open(t.Context(), store.Options{Driver: "mysql", DSN: "x"})
	require.ErrorContains(t, err, `unknown driver "mysql"`)
}

func TestSQLiteDSNForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, dsn := range []string{
		filepath.Join(dir, "plain.db"),
		filepath.Join(dir, "params.db") + "?_cache_size=-4000",
		"file:" + filepath.Join(dir, "uri.db") + "?cache=private",
		":memory:",
	} {
		st := openDSN(t, store.DriverSQLite, dsn)
		require.Equal(t, store.DriverSQLite, st.Driver())
		require.NoError(t, st.Migrate(t.Context()), dsn)
		res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: console, ChannelThreadID: "c", Text: "hi", PlanRun: true})
		require.NoError(t, err, dsn)
		msgs, err := st.RecentMessages(t.Context(), res.Conversation.ID, 10)
		require.NoError(t, err, dsn)
		require.Len(t, msgs, 1, dsn)

		var fk, journal string
		require.NoError(t, st.DB().Raw("PRAGMA foreign_keys").Row().Scan(&fk))
		require.Equal(t, "1", fk, dsn)
		require.NoError(t, st.DB().Raw("PRAGMA journal_mode").Row().Scan(&journal))
		if dsn != ":memory:" {
			require.Equal(t, "wal", journal, dsn)
		}
	}
}

// TestSQLiteTwoProcesses writes to one file through two stores, as a bot and
// the CLI would: their writers meet in SQLite's lock, where immediate
// transactions and busy_timeout must turn contention into waiting, never
// into "database is locked".
func TestSQLiteTwoProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openDSN(t, store.DriverSQLite, path)
	require.NoError(t, a.Migrate(t.Context()))
	b := openDSN(t, store.DriverSQLite, path)

	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		st := a
		if w%2 == 1 {
			st = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := st.RecordInbound(t.Context(), core.InboundRecord{
					Platform: web, ChannelThreadID: "shared", Text: fmt.Sprintf("%d-%d", w, i), PlanRun: true,
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	conv, err := b.ConversationByThread(t.Context(), web, "shared")
	require.NoError(t, err)
	msgs, err := a.Messages(t.Context(), conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, writers*each)
	for i, m := range msgs {
		require.Equal(t, int64(i+1), m.Seq)
	}
}

// TestSQLiteReadThenWriteTransactions runs transactions that read before
// they write from two stores on one file. A deferred transaction would fail
// its upgrade to a writer with "database is locked" whenever another writer
// committed since its read; immediate transactions (_txlock=immediate) take
// the write lock at BEGIN and wait their turn instead.
func TestSQLiteReadThenWriteTransactions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openDSN(t, store.DriverSQLite, path)
	require.NoError(t, a.Migrate(t.Context()))
	b := openDSN(t, store.DriverSQLite, path)
	res, err := a.RecordInbound(t.Context(), core.InboundRecord{Platform: web, ChannelThreadID: "rw", Text: "hi"})
	require.NoError(t, err)
	id := res.Conversation.ID

	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		db := a.DB()
		if w%2 == 1 {
			db = b.DB()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				errs <- db.WithContext(t.Context()).Transaction(func(tx *gorm.DB) error {
					var n int
					if err := tx.Raw(`SELECT length(display_name) FROM conversations WHERE id = ?`, id).Row().Scan(&n); err != nil {
						return err
					}
					return tx.Exec(`UPDATE conversations SET display_name = display_name || 'x' WHERE id = ?`, id).Error
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	conv, err := a.Conversation(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, conv.DisplayName, writers*each, "every increment landed")
}

func TestDescribeShowsWhereButNoSecret(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ driver, dsn, want string }{
		{"sqlite", "parley.db", "parley.db"},
		{"sqlite", "/var/lib/parley/parley.db?_auth_pass=hunter2", "/var/lib/parley/parley.db"},
		{"sqlite", "file:/srv/p.db?cache=private", "/srv/p.db"},
		{"sqlite", "file:rel%20dir/p.db", "rel dir/p.db"},
		{"sqlite", ":memory:", "in memory"},
		{"sqlite", "file:x?mode=memory&cache=shared", "in memory"},
		{"", "parley.db", "parley.db"},
		{"postgres", "postgres://parley:hunter2@db.internal:5432/parley?sslmode=disable&password=hunter2", "db.internal:5432/parley"},
		{"postgres", "postgresql://parley@/parley?host=/run/postgresql", "/run/postgresql/parley"},
		{"postgres", "host=db.internal port=5433 user=parley password='hunter2' dbname=bots", "db.internal:5433/bots"},
		{"postgres", "dbname=bots password=hunter2", "localhost/bots"},
		{"postgres", "postgres://u:hunter2@[::1]:5432/x", "[::1]:5432/x"},
	} {
		got := store.Describe(tc.driver, tc.dsn)
		require.Equal(t, tc.want, got, "%s %s", tc.driver, tc.dsn)
		require.NotContains(t, got, "hunter2")
	}
	require.Empty(t, store.SQLiteFile(":memory:"))
	require.Equal(t, "parley.db", store.SQLiteFile("parley.db?_busy_timeout=5"))
}
