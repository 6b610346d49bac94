package ircadapter

import (
	"strings"
	"unicode/utf8"
)

// message is one IRC protocol line (RFC 1459 §2.3, with IRCv3 tags):
// "@tags :source COMMAND param param :trailing".
type message struct {
	tags    map[string]string
	source  string // nick!user@host or a server name; "" when absent
	command string // upper case: "PRIVMSG", "001"
	params  []string
}

// parse reads one line (without its CR LF). ok is false for an empty line.
func parse(line string) (m message, ok bool) {
	if strings.HasPrefix(line, "@") {
		tags, rest, _ := strings.Cut(line[1:], " ")
		m.tags = map[string]string{}
		for _, kv := range strings.Split(tags, ";") {
			k, v, _ := strings.Cut(kv, "=")
			m.tags[k] = unescapeTag(v)
		}
		line = rest
	}
	line = strings.TrimLeft(line, " ")
	if strings.HasPrefix(line, ":") {
		m.source, line, _ = strings.Cut(line[1:], " ")
	}
	for line = strings.TrimLeft(line, " "); line != ""; line = strings.TrimLeft(line, " ") {
		if line[0] == ':' {
			m.params = append(m.params, line[1:])
			break
		}
		var p string
		p, line, _ = strings.Cut(line, " ")
		m.params = append(m.params, p)
	}
	if len(m.params) == 0 {
		return m, false
	}
	m.command, m.params = strings.ToUpper(m.params[0]), m.params[1:]
	return m, true
}

// param returns the i-th parameter, or "".
func (m message) param(i int) string {
	if i < len(m.params) {
		return m.params[i]
	}
	return ""
}

// nick is the nick of the message's source ("" for a server).
func (m message) nick() string {
	n, _, isUser := strings.Cut(m.source, "!")
	if !isUser && strings.Contains(n, ".") {
		return "" // a server name
	}
	return n
}

// unescapeTag decodes an IRCv3 tag value ("\s" is a space, "\:" a ';').
func unescapeTag(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i == len(v)-1 {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch v[i] {
		case ':':
			b.WriteByte(';')
		case 's':
			b.WriteByte(' ')
		case 'r':
			b.WriteByte('\r')
		case 'n':
			b.WriteByte('\n')
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// line builds an outgoing line; the last parameter goes after ':' when it
// must (it is empty, starts with ':' or holds a space).
func line(command string, params ...string) string {
	var b strings.Builder
	b.WriteString(command)
	for i, p := range params {
		b.WriteByte(' ')
		if i == len(params)-1 && (p == "" || p[0] == ':' || strings.Contains(p, " ")) {
			b.WriteByte(':')
		}
		b.WriteString(p)
	}
	return b.String()
}

// casefold maps a nick to the form the server compares (ISUPPORT
// CASEMAPPING): "ascii" folds A-Z, "rfc1459" (the default) also []\~ to
// {}|^, and "rfc1459-strict" []\ but not ~.
func casefold(mapping, s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		case mapping == "ascii":
		case r == '[' || r == ']' || r == '\\':
			return r + '{' - '['
		case r == '~' && mapping != "rfc1459-strict":
			return '^'
		}
		return r
	}, s)
}

// isChannel reports whether target names a channel rather than a nick.
func isChannel(target string) bool {
	return target != "" && strings.ContainsRune("#&+!", rune(target[0]))
}

// validNick reports whether s can be a nick to send to: no channel
// prefix, no space, comma, control character or '!' '@' '*' '?'.
func validNick(s string) bool {
	if s == "" || len(s) > 64 || isChannel(s) || s[0] == ':' || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || strings.ContainsRune(",!@*?", r)
	})
}

// decodeText turns a message's bytes into text: UTF-8 as it is, anything
// else read as Latin-1 (what older IRC clients send), then without IRC's
// formatting codes (bold, colours, reverse, italics, underline, reset).
func decodeText(s string) string {
	if !utf8.ValidString(s) {
		r := make([]rune, len(s))
		for i := 0; i < len(s); i++ {
			r[i] = rune(s[i])
		}
		s = string(r)
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 0x02, 0x0f, 0x11, 0x16, 0x1d, 0x1e, 0x1f:
		case 0x03: // ^C, then an optional colour "NN" or "NN,NN"
			i += digits(s[i+1:], 2)
			if i+2 < len(s) && s[i+1] == ',' && digits(s[i+2:], 2) > 0 {
				i += 1 + digits(s[i+2:], 2)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// digits counts the ASCII digits at the start of s, at most n.
func digits(s string, n int) int {
	i := 0
	for i < n && i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
