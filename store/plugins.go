package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// What plugins get of the store: their own migrations, run beside the
// store's, and a handle for the queries of their own tables.

// Database is the handle plugins run the queries of their own tables
// through (core.Env.Database): reads on the store's readers, writes on its
// write path, times bound and scanned as the store keeps them.
func (s *Store) Database() core.Database { return pluginDB{s} }

// pluginDB is core.Database on the store. A type of its own keeps these
// methods off Store, whose methods are the store's queries.
type pluginDB struct{ s *Store }

func (d pluginDB) Dialect() string {
	if d.s.driver == DriverPostgres {
		return core.DialectPostgres
	}
	return core.DialectSQLite
}

func (d pluginDB) Read(ctx context.Context) *gorm.DB { return d.s.r.WithContext(ctx) }

func (d pluginDB) Write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return d.s.write(ctx, fn)
}

func (d pluginDB) Time(t time.Time) any { return d.s.q.t(t) }

func (d pluginDB) ScanTime(t *time.Time) any { return timeCol{t} }

// Bot is the id of the bot whose view (ForBot) the handle came from, ""
// for AllBots: a plugin whose queries find conversations by something
// other than their id (the memory plugin's ClaimWork) limits them to it
// with conversations.bot_id. Not in core.Database: a plugin asks for it
// with interface{ Bot() string }.
func (d pluginDB) Bot() string { return d.s.bot }

// migratePlugins runs the plugins' migrations the database lacks, after
// the store's own (their tables refer to the store's). Each is recorded in
// plugin_migrations under its plugin's name, so plugins and the store
// number their versions apart. Like the store's, each runs in its own
// transaction, under the migration lock on PostgreSQL.
func (s *Schema) migratePlugins(ctx context.Context, plugins []core.Migrator) error {
	if len(plugins) == 0 {
		return nil
	}
	db := s.w.WithContext(ctx)
	types := typeMap(s.driver)
	create := types.Replace(`CREATE TABLE IF NOT EXISTS plugin_migrations (
		plugin TEXT NOT NULL,
		version INTEGER NOT NULL,
		name TEXT NOT NULL,
		applied_at {{time}} NOT NULL,
		PRIMARY KEY (plugin, version)
	)`)
	if err := db.Transaction(func(tx *gorm.DB) error {
		if err := s.lockMigrations(tx); err != nil {
			return err
		}
		return tx.Exec(create).Error
	}); err != nil {
		return fmt.Errorf("migrating: creating plugin_migrations: %w", err)
	}
	for _, p := range plugins {
		for _, m := range p.Migrations() {
			if err := db.Transaction(func(tx *gorm.DB) error { return s.applyPluginMigration(tx, p.Name(), m) }); err != nil {
				return fmt.Errorf("migrating plugin %s to version %d (%s): %w", p.Name(), m.Version, m.Name, err)
			}
		}
	}
	return nil
}

// applyPluginMigration runs m in tx unless plugin_migrations has it.
func (s *Schema) applyPluginMigration(tx *gorm.DB, plugin string, m core.Migration) error {
	if err := s.lockMigrations(tx); err != nil {
		return err
	}
	var n int64
	if err := tx.Raw(`SELECT COUNT(*) FROM plugin_migrations WHERE plugin = ? AND version = ?`, plugin, m.Version).
		Row().Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	types := typeMap(s.driver)
	stmts := append([]string(nil), m.Statements...)
	if s.driver == DriverPostgres {
		stmts = append(stmts, m.Postgres...)
	} else {
		stmts = append(stmts, m.SQLite...)
	}
	for _, stmt := range stmts {
		if err := tx.Exec(types.Replace(stmt)).Error; err != nil {
			return err
		}
	}
	for _, c := range m.Columns {
		if err := s.addColumn(tx, c); err != nil {
			return err
		}
	}
	return tx.Exec(`INSERT INTO plugin_migrations (plugin, version, name, applied_at) VALUES (?, ?, ?, ?)`,
		plugin, m.Version, m.Name, s.q.t(s.now())).Error
}

// addColumn adds c to its table unless the table has it already.
func (s *Schema) addColumn(tx *gorm.DB, c core.Column) error {
	q := `SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?`
	if s.driver == DriverPostgres {
		q = `SELECT COUNT(*) FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?`
	}
	var n int64
	if err := tx.Raw(q, c.Table, c.Name).Row().Scan(&n); err != nil {
		return fmt.Errorf("looking for column %s.%s: %w", c.Table, c.Name, err)
	}
	if n > 0 {
		return nil
	}
	stmt := fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, c.Table, c.Name, typeMap(s.driver).Replace(c.Definition))
	if err := tx.Exec(stmt).Error; err != nil {
		return fmt.Errorf("adding column %s.%s: %w", c.Table, c.Name, err)
	}
	return nil
}
