package store

import (
	"database/sql"
	"log/slog"
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
	q, args = spread(q, args)
	return tx.Statement.ConnPool.QueryRowContext(tx.Statement.Context, q, args...)
}

// exec runs q, a statement of the store's own that returns no row, on tx
// the way row does.
func exec(tx *gorm.DB, q string, args ...any) error {
	if !direct(tx) {
		return tx.Exec(q, args...).Error
	}
	q, args = spread(q, args)
	_, err := tx.Statement.ConnPool.ExecContext(tx.Statement.Context, q, args...)
	return err
}

// direct reports whether tx's statements may skip gorm.
func direct(tx *gorm.DB) bool {
	if tx.Dialector.Name() != DriverSQLite {
		return false
	}
	l, ok := tx.Logger.(gormLogger)
	return ok && !l.log.Enabled(tx.Statement.Context, slog.LevelDebug)
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
