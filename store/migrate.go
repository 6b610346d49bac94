package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Schema is the database's schema: migrating it and its version.
type Schema struct{ *dbs }

// migrationLockKey is the first half of the PostgreSQL advisory lock taken
// while migrating; the second half is a hash of the current schema, so
// replicas sharing a schema migrate one at a time while separate schemas
// (tests) do not wait on each other.
const migrationLockKey = 0x5061726c // "Parl"

// Migrate brings the schema to LatestSchemaVersion, then runs the
// migrations of plugins (see migratePlugins). Each pending migration runs
// in its own transaction together with its schema_migrations row, so a
// failure leaves the database at the last good version and a rerun is a
// no-op. On PostgreSQL every transaction first takes an advisory lock, so
// replicas starting together apply each migration once.
func (s *Schema) Migrate(ctx context.Context, plugins ...core.Migrator) error {
	db := s.w.WithContext(ctx)
	create := `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY,
		name TEXT NOT NULL,
		applied_at ` + typeMap(s.driver).Replace("{{time}}") + ` NOT NULL
	)`
	if err := db.Transaction(func(tx *gorm.DB) error {
		if err := s.lockMigrations(tx); err != nil {
			return err
		}
		return tx.Exec(create).Error
	}); err != nil {
		return fmt.Errorf("migrating: creating schema_migrations: %w", err)
	}
	types := typeMap(s.driver)
	for _, m := range migrations {
		err := db.Transaction(func(tx *gorm.DB) error {
			if err := s.lockMigrations(tx); err != nil {
				return err
			}
			var n int64
			if err := tx.Raw(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Row().Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			stmts := append([]string(nil), m.statements...)
			if s.driver == DriverPostgres {
				stmts = append(stmts, m.postgres...)
			} else {
				stmts = append(stmts, m.sqlite...)
			}
			for _, stmt := range stmts {
				if err := tx.Exec(types.Replace(stmt)).Error; err != nil {
					return err
				}
			}
			if m.backfill != nil {
				if err := m.backfill(s.dbs, tx); err != nil {
					return err
				}
			}
			return tx.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.q.t(s.now())).Error
		})
		if err != nil {
			return fmt.Errorf("migrating to version %d (%s): %w", m.version, m.name, err)
		}
	}
	return s.migratePlugins(ctx, plugins)
}

func (s *Schema) lockMigrations(tx *gorm.DB) error {
	if s.driver != DriverPostgres {
		// SQLite's immediate transactions already serialise migrators.
		return nil
	}
	return tx.Exec(`SELECT pg_advisory_xact_lock(?, hashtext(current_schema()))`, migrationLockKey).Error
}

// SchemaVersion is the newest applied migration, 0 for an empty database.
func (s *Schema) SchemaVersion(ctx context.Context) (int, error) {
	db := s.r.WithContext(ctx)
	var exists int64
	q := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`
	if s.driver == DriverPostgres {
		q = `SELECT COUNT(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'`
	}
	if err := db.Raw(q).Row().Scan(&exists); err != nil {
		return 0, fmt.Errorf("reading schema version: %w", err)
	}
	if exists == 0 {
		return 0, nil
	}
	var v int
	if err := db.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Row().Scan(&v); err != nil {
		return 0, fmt.Errorf("reading schema version: %w", err)
	}
	return v, nil
}

// Migration names one schema version.
type Migration struct {
	Version int
	Name    string
}

// PendingMigrations lists the migrations Migrate would apply, oldest first
// (all of them on an empty database), for `parley doctor`. It only reads:
// nothing is created, not even schema_migrations.
func (s *Schema) PendingMigrations(ctx context.Context) ([]Migration, error) {
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return nil, err
	}
	applied := map[int]bool{}
	if v > 0 {
		rows, err := s.r.WithContext(ctx).Raw(`SELECT version FROM schema_migrations`).Rows()
		if err != nil {
			return nil, fmt.Errorf("reading applied migrations: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				return nil, fmt.Errorf("reading applied migrations: %w", err)
			}
			applied[n] = true
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading applied migrations: %w", err)
		}
	}
	var pending []Migration
	for _, m := range migrations {
		if !applied[m.version] {
			pending = append(pending, Migration{Version: m.version, Name: m.name})
		}
	}
	return pending, nil
}
