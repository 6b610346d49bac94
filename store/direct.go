package store

import (
	"context"
	"database/sql"
	"log/slog"
	"reflect"
	"strings"

	"gorm.io/gorm"
)

// row runs q, a statement of the store's own that returns one row, on tx
// (a transaction or a pool). On SQLite it goes to the connection directly:
// go-sqlite3 takes the '?' placeholders and the values as they are, so
// gorm's rebuilding of each statement is pure cost, and the hot statements
// run on the single writer, where all cost is serial (measured: a sixth of
// the writer's time in a turn). PostgreSQL, whose placeholders gorm
// numbers, and SQL traced at debug level go through gorm. q must hold no
// '?' but placeholders.
func row(tx *gorm.DB, q string, args ...any) *sql.Row {
	if !direct(tx) {
		return tx.Raw(q, args...).Row()
	}
	q, args = sqliteSQL(q, args)
	return tx.Statement.ConnPool.QueryRowContext(tx.Statement.Context, q, args...)
}

// readRow is row on db (a pool, not a transaction) with ctx. On the
// direct path it skips db.WithContext, a gorm session (a Statement clone)
// made only to carry ctx: the hot reads run several times a turn.
func readRow(ctx context.Context, db *gorm.DB, q string, args ...any) *sql.Row {
	if !directCtx(ctx, db) {
		return row(db.WithContext(ctx), q, args...)
	}
	q, args = sqliteSQL(q, args)
	return db.Statement.ConnPool.QueryRowContext(ctx, q, args...)
}

// readQuery is query on db (a pool) with ctx, the way readRow is row.
func readQuery(ctx context.Context, db *gorm.DB, q string, args ...any) (*sql.Rows, error) {
	if !directCtx(ctx, db) || !plainArgs(args) {
		return query(db.WithContext(ctx), q, args...)
	}
	q, args = sqliteSQL(q, args)
	return db.Statement.ConnPool.QueryContext(ctx, q, args...)
}

// query runs q, a statement of the store's own that returns rows, on tx
// the way row does. Arguments that are lists of anything but strings go
// through gorm, which knows how to spread them.
func query(tx *gorm.DB, q string, args ...any) (*sql.Rows, error) {
	if !direct(tx) || !plainArgs(args) {
		return tx.Raw(q, args...).Rows()
	}
	q, args = sqliteSQL(q, args)
	return tx.Statement.ConnPool.QueryContext(tx.Statement.Context, q, args...)
}

// exec runs q, a statement of the store's own that returns no row, on tx
// the way row does.
func exec(tx *gorm.DB, q string, args ...any) error {
	if !direct(tx) {
		return tx.Exec(q, args...).Error
	}
	q, args = sqliteSQL(q, args)
	_, err := tx.Statement.ConnPool.ExecContext(tx.Statement.Context, q, args...)
	return err
}

// direct reports whether tx's statements may skip gorm.
func direct(tx *gorm.DB) bool { return directCtx(tx.Statement.Context, tx) }

// directCtx is direct for statements on db run with ctx.
func directCtx(ctx context.Context, db *gorm.DB) bool {
	if db.Dialector.Name() != DriverSQLite {
		return false
	}
	l, ok := db.Logger.(gormLogger)
	return ok && !l.log.Enabled(ctx, slog.LevelDebug)
}

// plainArgs reports whether spread can bind args: no list among them but
// []string (and []byte, which is a value).
func plainArgs(args []any) bool {
	for _, a := range args {
		switch a.(type) {
		case []string, []byte:
			continue
		}
		if a != nil && reflect.TypeOf(a).Kind() == reflect.Slice {
			return false
		}
	}
	return true
}

// sqliteSQL is q and args as go-sqlite3 takes them: lists spread (see
// spread) and "LIMIT ?" written "LIMIT +?". SQLite's planner reads a
// LIMIT bound to a bare parameter and marks the statement to be compiled
// again whenever that parameter is bound anew, and go-sqlite3 clears the
// bindings after every use: such a statement was parsed and planned on
// every execution, its cached compilation never reused (measured: the
// claim of several runs took ~300 µs, ~50 µs without). The unary plus
// hides the parameter from the planner and limits the same.
func sqliteSQL(q string, args []any) (string, []any) {
	q, args = spread(q, args)
	if strings.Contains(q, "LIMIT ?") {
		q = strings.ReplaceAll(q, "LIMIT ?", "LIMIT +?")
	}
	return q, args
}

// spread turns each []string argument into a list, "IN ?" into
// "IN (?, ?)", as gorm does for the statements that take platforms.
func spread(q string, args []any) (string, []any) {
	lists := false
	for _, a := range args {
		if _, ok := a.([]string); ok {
			lists = true
			break
		}
	}
	if !lists {
		return q, args
	}
	var b strings.Builder
	out := make([]any, 0, len(args)+4)
	i := 0
	for {
		at := strings.IndexByte(q, '?')
		if at < 0 || i >= len(args) {
			b.WriteString(q)
			return b.String(), out
		}
		b.WriteString(q[:at])
		q = q[at+1:]
		list, ok := args[i].([]string)
		if !ok {
			b.WriteByte('?')
			out = append(out, args[i])
			i++
			continue
		}
		if len(list) == 0 {
			b.WriteString("(NULL)") // as gorm writes it: matches nothing
			i++
			continue
		}
		b.WriteByte('(')
		for j, v := range list {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('?')
			out = append(out, v)
		}
		b.WriteByte(')')
		i++
	}
}
