package arch

import (
	"go/ast"
	"go/token"
	"sort"
	"strings"
	"testing"
)

// TestImportsPointOneWay checks the rules docs/architecture.md draws: core
// imports only its own leaves and internal helpers; an engine imports
// core, the Outbox and the history cache, never another engine (they meet
// through interfaces engine.New wires); adapters and plugins import no
// engine, and neither imports the other.
func TestImportsPointOneWay(t *testing.T) {
	_, files := parseModule(t)
	engines := []string{"engine/intake", "engine/turns", "engine/jobs", "engine/outbox", "engine/history", "engine/promises", "engine/typing"}
	var broken []string
	for _, f := range files {
		pkg := strings.TrimPrefix(strings.TrimPrefix(f.pkg, module), "/")
		for _, imp := range f.ast.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			dep, ours := strings.CutPrefix(path, module+"/")
			if !ours {
				continue
			}
			if why := forbidden(pkg, dep, engines); why != "" {
				broken = append(broken, pkg+" -> "+dep+": "+why)
			}
		}
	}
	sort.Strings(broken)
	broken = compact(broken)
	for _, b := range broken {
		t.Error(b)
	}
}

// forbidden says why pkg may not import dep ("" when it may).
func forbidden(pkg, dep string, engines []string) string {
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	switch {
	case pkg == "core" && !under(dep, "core") && !under(dep, "internal"):
		return "core holds the contracts and imports only its leaves"
	case under(pkg, "adapters") && (under(dep, "plugins") || under(dep, "engine")):
		return "an adapter imports neither a plugin nor an engine"
	case under(pkg, "plugins") && (under(dep, "adapters") || under(dep, "engine")):
		return "a plugin imports neither an adapter nor an engine"
	}
	for _, e := range engines {
		if !under(pkg, e) || strings.HasSuffix(pkg, "test") {
			continue
		}
		for _, other := range engines {
			if other == e || shared(other) {
				continue
			}
			if under(dep, other) {
				return "engines meet through interfaces, not imports"
			}
		}
		if shared(e) && under(dep, "engine") && !under(dep, "engine/history") {
			return "the Outbox and the engines' helpers import no engine"
		}
	}
	return ""
}

// shared are the engine packages every engine may use: the Outbox and
// the helpers (the history cache, the promise check, the typing
// indicator). The Outbox imports only the history cache, the helpers
// nothing of the engine.
func shared(e string) bool {
	switch e {
	case "engine/outbox", "engine/history", "engine/promises", "engine/typing":
		return true
	}
	return false
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func TestForbiddenCatchesWhatTheRulesForbid(t *testing.T) {
	engines := []string{"engine/intake", "engine/turns", "engine/jobs", "engine/outbox", "engine/history", "engine/promises", "engine/typing"}
	for _, c := range []struct {
		pkg, dep string
		bad      bool
	}{
		{"core", "store", true},
		{"core", "core/llm", false},
		{"engine/turns", "engine/intake", true},
		{"engine/jobs", "engine/turns", true},
		{"engine/turns", "engine/outbox", false},
		{"engine/outbox", "engine/turns", true},
		{"engine/outbox", "engine/history", false},
		{"engine/turns", "engine/promises", false},
		{"engine/promises", "engine/outbox", true},
		{"engine/typing", "engine/turns", true},
		{"engine", "engine/turns", false},
		{"adapters/telegram", "engine/outbox", true},
		{"plugins/mood", "adapters/telegram", true},
		{"plugins/mood", "core", false},
	} {
		if got := forbidden(c.pkg, c.dep, engines) != ""; got != c.bad {
			t.Errorf("%s -> %s: forbidden %v, want %v", c.pkg, c.dep, got, c.bad)
		}
	}
}

// TestStoreKeepsOnlyTheEnginesTables checks the condition sqlPackage's
// size is allowed on: no query of the store reads or writes a plugin's
// table (the plugins own theirs, with their migrations). The store's old
// migration steps, which created them before, may still name them.
func TestStoreKeepsOnlyTheEnginesTables(t *testing.T) {
	_, files := parseModule(t)
	pluginTables := []string{"mood_points", "facts"}
	for _, f := range files {
		if f.pkg != sqlPackage || strings.HasSuffix(f.path, "migrations.go") {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			for _, table := range pluginTables {
				if sqlNames(lit.Value, table) {
					t.Errorf("%s: the store queries the plugins' table %s: %s", f.path, table, lit.Value)
				}
			}
			return true
		})
	}
}

// sqlNames reports whether the SQL text names table (as a whole word).
func sqlNames(sql, table string) bool {
	for i := strings.Index(sql, table); i >= 0; {
		before := i == 0 || !isWord(sql[i-1])
		end := i + len(table)
		after := end >= len(sql) || !isWord(sql[end])
		if before && after {
			return true
		}
		next := strings.Index(sql[end:], table)
		if next < 0 {
			break
		}
		i = end + next
	}
	return false
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func TestSQLNamesFindsWholeTableNames(t *testing.T) {
	for sql, want := range map[string]bool{
		"`DELETE FROM facts WHERE conversation_id = ?`":      true,
		"`SELECT facts_seq FROM conversations`":              false,
		"`INSERT INTO mood_points (conversation_id) VALUES`": true,
		"`UPDATE conversations SET last_seq = ?`":            false,
	} {
		if got := sqlNames(sql, "facts") || sqlNames(sql, "mood_points"); got != want {
			t.Errorf("sqlNames(%s) = %v, want %v", sql, got, want)
		}
	}
}
