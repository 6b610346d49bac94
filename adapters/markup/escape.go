package markup

import "strings"

// telegramReserved are the characters MarkdownV2 reserves outside code
// and links; each must be escaped with a backslash where it is literal.
const telegramReserved = "_*[]()~`>#+-=|{}.!\\"

// escapeTelegram escapes text outside entities.
func escapeTelegram(s string) string { return backslash(s, telegramReserved) }

// escapeTelegramCode escapes text inside code and pre, where only ` and \
// are special.
func escapeTelegramCode(s string) string { return backslash(s, "`\\") }

// escapeTelegramURL escapes a URL inside (...) of a link, where only ) and
// \ are special.
func escapeTelegramURL(s string) string { return backslash(s, ")\\") }

// backslash puts a backslash before every byte of s that is in set (ASCII).
func backslash(s, set string) string {
	if !strings.ContainsAny(s, set) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// escapeSlack escapes the three characters Slack's mrkdwn requires.
func escapeSlack(s string) string { return slackEscaper.Replace(s) }

var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// discordSpecial are escaped anywhere: emphasis, code, spoiler, masked
// links, and < which starts mentions, channels and timestamps.
const discordSpecial = "\\*_~`|[]<"

// escapeDiscord escapes s for Discord; lineStart says s starts a line,
// where '>', '#' and '-' and a number followed by '.' start block markup
// (quote, heading, list, subtext). Bare http(s) URLs are copied as they
// are: Discord reads a URL before escapes, so a backslash would end up in
// the link.
func escapeDiscord(s string, lineStart bool) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	atStart := lineStart
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\n' {
			b.WriteByte(c)
			i++
			atStart = true
			continue
		}
		if atStart {
			if c == ' ' || c == '\t' {
				b.WriteByte(c)
				i++
				continue
			}
			atStart = false
			switch {
			case c == '>' || c == '#' || c == '-':
				b.WriteByte('\\')
				b.WriteByte(c)
				i++
				continue
			case c >= '0' && c <= '9':
				j := i
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
				if j < len(s) && (s[j] == '.' || s[j] == ')') {
					b.WriteString(s[i:j])
					b.WriteByte('\\')
					b.WriteByte(s[j])
					i = j + 1
					continue
				}
			}
		}
		if n := urlAt(s, i); n > 0 {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		if strings.IndexByte(discordSpecial, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// urlAt is the length of the bare http(s) URL starting at s[i], or 0.
func urlAt(s string, i int) int {
	if i > 0 && isWordByte(s[i-1]) {
		return 0
	}
	rest := s[i:]
	var scheme int
	switch {
	case len(rest) > 8 && strings.EqualFold(rest[:8], "https://"):
		scheme = 8
	case len(rest) > 7 && strings.EqualFold(rest[:7], "http://"):
		scheme = 7
	default:
		return 0
	}
	n := scheme
	for n < len(rest) && rest[n] != '<' && rest[n] != ' ' && rest[n] != '\t' && rest[n] != '\n' {
		n++
	}
	if n == scheme {
		return 0
	}
	return n
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
