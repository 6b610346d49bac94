package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// tablePlugin is a plugin that keeps a table of its own.
type tablePlugin struct {
	name       string
	migrations []core.Migration
}

func (p tablePlugin) Name() string                 { return p.name }
func (p tablePlugin) Migrations() []core.Migration { return p.migrations }
func (p tablePlugin) with(m ...core.Migration) tablePlugin {
	return tablePlugin{p.name, append(p.migrations, m...)}
}

// notes is a plugin's first migration: a table, an index per dialect and
// a column on the store's conversations.
var notes = core.Migration{
	Version: 1,
	Name:    "notes",
	Statements: []string{`CREATE TABLE IF NOT EXISTS notes (
		id {{id}},
		conversation_id {{bigint}} NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
		body TEXT NOT NULL,
		created_at {{time}} NOT NULL
	)`},
	SQLite:   []string{`CREATE INDEX IF NOT EXISTS notes_conversation ON notes (conversation_id)`},
	Postgres: []string{`CREATE INDEX IF NOT EXISTS notes_conversation ON notes USING btree (conversation_id)`},
	Columns:  []core.Column{{Table: "conversations", Name: "notes_seen", Definition: "{{bigint}} NOT NULL DEFAULT 0"}},
}

func (b *testBundle) pluginVersions(t *testing.T, plugin string) []int {
	t.Helper()
	var vs []int
	require.NoError(t, b.st.DB().Raw(`SELECT version FROM plugin_migrations WHERE plugin = ? ORDER BY version`, plugin).Scan(&vs).Error)
	return vs
}

// A plugin's migrations run after the store's, once each, numbered apart
// from the store's and from other plugins'.
func testPluginMigrations(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "a", "hi", b.t0, false).Conversation
	p := tablePlugin{name: "notes", migrations: []core.Migration{notes}}
	other := tablePlugin{name: "other", migrations: []core.Migration{{Version: 1, Name: "nothing", Statements: []string{`SELECT 1`}}}}
	require.NoError(t, b.st.Migrate(b.ctx, p, other))
	require.NoError(t, b.st.Migrate(b.ctx, p, other), "a second migrate is a no-op")
	require.Equal(t, []int{1}, b.pluginVersions(t, "notes"))
	require.Equal(t, []int{1}, b.pluginVersions(t, "other"), "each plugin has its own versions")
	require.Equal(t, int64(store.LatestSchemaVersion()), b.count(t, "schema_migrations", "1 = 1"), "the store's are apart")
	require.NoError(t, b.st.DB().Exec(`INSERT INTO notes (conversation_id, body, created_at) VALUES (?, 'x', ?)`,
		conv.ID, b.st.Database().Time(b.t0)).Error)
	require.Zero(t, b.count(t, "conversations", "notes_seen <> 0"))

	// A later version runs alone; one that fails leaves nothing of itself.
	bad := core.Migration{Version: 3, Name: "bad", Statements: []string{`CREATE TABLE half_made (id INTEGER)`, `NOT SQL`}}
	err := b.st.Migrate(b.ctx, p.with(core.Migration{Version: 2, Name: "more", Statements: []string{`ALTER TABLE notes ADD COLUMN tag TEXT`}}, bad))
	require.ErrorContains(t, err, "migrating plugin notes to version 3 (bad)")
	require.Equal(t, []int{1, 2}, b.pluginVersions(t, "notes"))
	var n int64
	require.Error(t, b.st.DB().Raw(`SELECT COUNT(*) FROM half_made`).Row().Scan(&n), "version 3 was rolled back")

	// Deleting the conversation takes the plugin's rows.
	_, err = b.st.DeleteConversation(b.ctx, conv.ID, true)
	require.NoError(t, err)
	require.Zero(t, b.count(t, "notes", "1 = 1"))
}

func testPluginMigrationsConcurrently(t *testing.T, open Opener) {
	st := open(t)
	ctx := t.Context()
	p := tablePlugin{name: "notes", migrations: []core.Migration{notes}}
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() { errs <- st.Migrate(ctx, p) }()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	var rows int64
	require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM plugin_migrations`).Row().Scan(&rows))
	require.Equal(t, int64(1), rows)
}

// A plugin's queries go through the store's read and write paths, with
// times kept as the store keeps them.
func testPluginDatabase(t *testing.T, open Opener) {
	b := setup(t, open)
	require.NoError(t, b.st.Migrate(b.ctx, tablePlugin{name: "notes", migrations: []core.Migration{notes}}))
	conv := b.inbound(t, "a", "hi", b.t0, false).Conversation
	db := b.st.Database()
	require.Equal(t, map[string]string{store.DriverSQLite: core.DialectSQLite, store.DriverPostgres: core.DialectPostgres}[b.st.Driver()],
		db.Dialect())
	at := time.Date(2030, 3, 4, 5, 6, 7, 891234567, time.FixedZone("x", 3600))
	var id int64
	require.NoError(t, db.Write(b.ctx, func(tx *gorm.DB) error {
		return tx.Raw(`INSERT INTO notes (conversation_id, body, created_at) VALUES (?, ?, ?) RETURNING id`,
			conv.ID, "note", db.Time(at)).Row().Scan(&id)
	}))
	var got time.Time
	require.NoError(t, db.Read(b.ctx).Raw(`SELECT created_at FROM notes WHERE id = ? AND created_at = ?`, id, db.Time(at)).
		Row().Scan(db.ScanTime(&got)))
	require.Equal(t, at.UTC().Truncate(time.Microsecond), got, "UTC, to the microsecond")
	require.Equal(t, time.UTC, got.Location())
}
