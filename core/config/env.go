package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// expandTree expands environment references in every scalar value below n
// (never in mapping keys), in place. A scalar that held a reference loses its
// resolved tag and quoting, so it is typed by the field it decodes into:
// "${PORT:-8080}" becomes an int for an int field and stays a string for a
// string field. Errors go to d, and the bad node is skipped when decoding.
func expandTree(n *yaml.Node, path string, lookup func(string) (string, bool), d *decoder) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			expandTree(c, path, lookup, d)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandTree(n.Content[i+1], joinPath(path, n.Content[i].Value), lookup, d)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandTree(c, indexPath(path, i), lookup, d)
		}
	case yaml.ScalarNode:
		v, hadRef, unset, err := expandEnv(n.Value, lookup)
		if err != nil {
			d.fail(n, path, err.Error())
			d.skip[n] = true
			return
		}
		n.Value = v
		if hadRef {
			d.fromEnv[path] = true
		}
		if unset != "" {
			d.unset[path] = unset
		}
		if hadRef && n.Style&yaml.TaggedStyle == 0 {
			n.Tag = ""
			n.Style &^= yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
		}
	}
	// Alias nodes point at an anchored node expanded where it is defined.
}

// expandEnv replaces ${VAR} and ${VAR:-default} in s with values from lookup
// and $$ with $. An unset VAR without a default expands to "". A $ followed
// by anything else is kept as is. hadRef reports whether any ${...} was
// replaced; unset names the first variable that was unset, without a
// default.
func expandEnv(s string, lookup func(string) (string, bool)) (out string, hadRef bool, unset string, err error) {
	if !strings.Contains(s, "$") {
		return s, false, "", nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", false, "", fmt.Errorf("malformed variable reference %q: missing \"}\"", snippet(s[i:]))
			}
			body := s[i+2 : i+2+end]
			name, def, hasDef := body, "", false
			if j := strings.Index(body, ":-"); j >= 0 {
				name, def, hasDef = body[:j], body[j+2:], true
			}
			if !validEnvName(name) {
				return "", false, "", fmt.Errorf("malformed variable reference %q: want ${NAME} or ${NAME:-default}", snippet("${"+name+"}"))
			}
			val, ok := lookup(name)
			if hasDef && (!ok || val == "") {
				val = def
			} else if !ok && unset == "" {
				unset = name
			}
			b.WriteString(val)
			hadRef = true
			i += 2 + end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), hadRef, unset, nil
}

// validEnvName reports whether name is a shell-style variable name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// snippet shortens a fragment quoted in an error message.
func snippet(s string) string {
	const maxRunes = 40
	if r := []rune(s); len(r) > maxRunes {
		return string(r[:maxRunes]) + "..."
	}
	return s
}

// noEnv is the lookup used when none is given: every variable is unset.
func noEnv(string) (string, bool) { return "", false }
