package storetest

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
)

// TableSchema describes table as the database has it: each column (name,
// type, nullability, default), foreign key and index, sorted, so that two
// databases' tables compare equal when they have the same definition,
// however it was written (CREATE TABLE or ALTER TABLE, IF NOT EXISTS or
// not, the order of the columns).
func TableSchema(t testing.TB, st *store.Store, table string) []string {
	t.Helper()
	queries := []string{
		`SELECT 'column ' || name || ' ' || type || ' notnull=' || "notnull" || ' default=' || COALESCE(dflt_value, '') || ' pk=' || pk
			FROM pragma_table_info(?)`,
		`SELECT 'fk ' || "from" || ' -> ' || "table" || '(' || "to" || ') on delete ' || on_delete FROM pragma_foreign_key_list(?)`,
		`SELECT 'index ' || sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`,
		// What the pragmas leave out: AUTOINCREMENT, CHECK constraints.
		`SELECT 'table ' || sql FROM sqlite_master WHERE type = 'table' AND name = ?`,
	}
	if st.Driver() == store.DriverPostgres {
		queries = []string{
			`SELECT 'column ' || column_name || ' ' || data_type || ' nullable=' || is_nullable || ' default=' || COALESCE(column_default, '')
				FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`,
			`SELECT 'constraint ' || pg_get_constraintdef(c.oid) FROM pg_constraint c
				WHERE c.conrelid = (quote_ident(current_schema()) || '.' || quote_ident(?))::regclass`,
			`SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?`,
		}
	}
	space := regexp.MustCompile(`\s+`)
	var out []string
	for _, q := range queries {
		var rows []string
		require.NoError(t, st.DB().Raw(q, table).Scan(&rows).Error, table)
		for _, r := range rows {
			if strings.HasPrefix(r, "table ") {
				r = sortedDefinitions(r)
			}
			// SQLite keeps a statement as written.
			r = strings.Replace(space.ReplaceAllString(r, " "), "IF NOT EXISTS ", "", 1)
			r = strings.ReplaceAll(strings.ReplaceAll(r, "( ", "("), " )", ")")
			out = append(out, r)
		}
	}
	require.NotEmpty(t, out, fmt.Sprintf("table %s has no columns", table))
	sort.Strings(out)
	return out
}

var sqlComment = regexp.MustCompile(`--[^\n]*`)

// sortedDefinitions is SQLite's CREATE TABLE text with its comments
// dropped and its column definitions and constraints sorted: a column
// added by ALTER TABLE is appended to the text, so the order of the
// migrations that added them would otherwise tell two equal tables apart.
func sortedDefinitions(create string) string {
	create = sqlComment.ReplaceAllString(create, "")
	open, end := strings.Index(create, "("), strings.LastIndex(create, ")")
	if open < 0 || end < open {
		return create
	}
	var defs []string
	depth, start := 0, open+1
	for i := open + 1; i < end; i++ {
		switch create[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				defs = append(defs, strings.TrimSpace(create[start:i]))
				start = i + 1
			}
		}
	}
	defs = append(defs, strings.TrimSpace(create[start:end]))
	sort.Strings(defs)
	return create[:open+1] + strings.Join(defs, ", ") + create[end:]
}
