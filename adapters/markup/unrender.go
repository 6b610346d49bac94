package markup

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// unrender reads markup of flavor f back the way the platform shows it,
// leniently: whatever s holds, it reads something (an unclosed span is
// read as text, a lone marker dropped). It is the reverse of the
// renderers, so it follows the same platform rules as markuptest does.
// Parts use it for their Plain text, and the splitter for the text of a
// stretch it has to rewrite.
func unrender(s string, f flavor) []seg {
	u := &unrenderer{}
	switch f {
	case telegram:
		u.telegram(s, 0, false)
	case discord:
		u.discord(s, true)
	case slack:
		u.slack(s, true)
	default:
		u.addString(s)
	}
	u.flush()
	return u.segs
}

// segKind is what a piece of visible text is.
type segKind uint8

const (
	segText segKind = iota
	segCode
	segPre
	segLink
	// segQuote marks a quoted line; it has no text.
	segQuote
)

// seg is a piece of visible text.
type seg struct {
	kind segKind
	text string
	url  string // of a link
}

type unrenderer struct {
	segs []seg
	text []byte // text not yet in segs
}

func (u *unrenderer) add(c byte)         { u.text = append(u.text, c) }
func (u *unrenderer) addString(s string) { u.text = append(u.text, s...) }

func (u *unrenderer) flush() {
	if len(u.text) > 0 {
		u.segs = append(u.segs, seg{text: string(u.text)})
		u.text = u.text[:0]
	}
}

func (u *unrenderer) emit(s seg) {
	u.flush()
	u.segs = append(u.segs, s)
}

// segsText is the text of segs with nothing but text.
func segsText(segs []seg) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(s.text)
	}
	return b.String()
}

// plainOf writes segs as plain text: links as "text (url)", quoted lines
// after quote (">" alone on an empty line).
func plainOf(segs []seg, quote string) string {
	var b strings.Builder
	for i, s := range segs {
		switch s.kind {
		case segQuote:
			if i+1 == len(segs) || segs[i+1].kind == segQuote || strings.HasPrefix(segs[i+1].text, "\n") {
				b.WriteString(strings.TrimRight(quote, " "))
			} else {
				b.WriteString(quote)
			}
		case segLink:
			switch {
			case s.text == "":
				b.WriteString(s.url)
			case s.text == s.url || s.url == "mailto:"+s.text:
				b.WriteString(s.text)
			default:
				b.WriteString(s.text + " (" + s.url + ")")
			}
		default:
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// telegram reads MarkdownV2 from s[i:]; in a link's text it stops at the
// closing ']' and returns where that is.
func (u *unrenderer) telegram(s string, i int, inLink bool) int {
	lineStart := i == 0 && !inLink
	for i < len(s) {
		c := s[i]
		if lineStart {
			lineStart = false
			if c == '>' {
				u.emit(seg{kind: segQuote})
				i++
				continue
			}
		}
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] > 0 && s[i+1] <= 126:
			u.add(s[i+1])
			i += 2
		case c == '\n':
			u.add(c)
			i++
			lineStart = !inLink
		case c == ']' && inLink:
			return i
		case strings.HasPrefix(s[i:], "```"):
			i = u.telegramPre(s, i+3)
		case c == '`':
			body, n := telegramUntil(s[i+1:], "`")
			u.emit(seg{kind: segCode, text: body})
			i += 1 + n
		case c == '*' || c == '_' || c == '~':
			i++
		case c == '|' && i+1 < len(s) && s[i+1] == '|':
			i += 2
		case c == '[' || c == '!' && i+1 < len(s) && s[i+1] == '[':
			if c == '!' {
				i++
			}
			i = u.telegramLink(s, i+1)
		default:
			u.add(c)
			i++
		}
	}
	return i
}

// telegramUntil reads code up to end (not escaped) and returns the code
// and the length read, end included; unclosed code runs to the end.
func telegramUntil(s, end string) (string, int) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] > 0 && s[i+1] <= 126 {
			i++
			b.WriteByte(s[i])
			continue
		}
		if strings.HasPrefix(s[i:], end) {
			return b.String(), i + len(end)
		}
		b.WriteByte(s[i])
	}
	return b.String(), len(s)
}

// telegramPre reads a pre block whose opening ``` ends at i.
func (u *unrenderer) telegramPre(s string, i int) int {
	j := i
	for j < len(s) && !isSpaceByte(s[j]) && s[j] != '`' {
		j++
	}
	if j != i && j < len(s) && s[j] != '`' {
		i = j // a language
	}
	if i < len(s) && s[i] == '\n' {
		i++
	}
	body, n := telegramUntil(s[i:], "```")
	u.emit(seg{kind: segPre, text: strings.TrimSuffix(body, "\n")})
	return i + n
}

// telegramLink reads a link whose text starts at i.
func (u *unrenderer) telegramLink(s string, i int) int {
	inner := &unrenderer{}
	i = inner.telegram(s, i, true)
	inner.flush()
	text := segsText(inner.segs)
	if i >= len(s) {
		u.addString(text) // unclosed: its text
		return i
	}
	i++ // ]
	url := text
	if i < len(s) && s[i] == '(' {
		var n int
		url, n = telegramUntil(s[i+1:], ")")
		i += 1 + n
	}
	u.emit(seg{kind: segLink, text: text, url: url})
	return i
}

// discord reads Discord markdown.
func (u *unrenderer) discord(s string, lineStart bool) {
	quoteAll := false
	for i := 0; i < len(s); {
		if lineStart {
			lineStart = false
			i = u.discordLineStart(s, i, &quoteAll)
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		switch {
		case c == '\n':
			u.add(c)
			i++
			lineStart = true
		case c == '\\' && i+1 < len(s):
			r, n := utf8.DecodeRuneInString(s[i+1:])
			if isASCIIAlnum(r) || unicode.IsSpace(r) {
				u.add(c)
				i++
				continue
			}
			u.addString(s[i+1 : i+1+n])
			i += 1 + n
		case strings.HasPrefix(s[i:], "```"):
			i += u.discordCodeBlock(s[i:])
		case c == '`':
			i += u.discordCode(s[i:])
		case strings.HasPrefix(s[i:], "**"), strings.HasPrefix(s[i:], "__"),
			strings.HasPrefix(s[i:], "~~"), strings.HasPrefix(s[i:], "||"):
			i += 2
		case c == '*':
			i++
		case c == '_':
			if i > 0 && isWordByte(s[i-1]) && i+1 < len(s) && isWordByte(s[i+1]) {
				u.add(c) // snake_case: not a marker
			}
			i++
		case c == '[':
			if n := u.discordLink(s[i:]); n > 0 {
				i += n
				continue
			}
			u.add(c)
			i++
		case c == '<':
			if end := strings.IndexByte(s[i:], '>'); end > 0 && isWebURL(s[i+1:i+end]) && !strings.ContainsAny(s[i+1:i+end], " \n") {
				u.emit(seg{kind: segLink, text: s[i+1 : i+end], url: s[i+1 : i+end]})
				i += end + 1
				continue
			}
			u.add(c)
			i++
		default:
			if n := urlAt(s, i); n > 0 {
				u.addString(s[i : i+n]) // a bare URL: as it is, escapes and all
				i += n
				continue
			}
			u.add(c)
			i++
		}
	}
}

// discordLineStart reads the block markup at the start of a line.
func (u *unrenderer) discordLineStart(s string, i int, quoteAll *bool) int {
	rest := s[i:]
	switch {
	case *quoteAll:
		u.emit(seg{kind: segQuote})
	case strings.HasPrefix(rest, ">>> "):
		*quoteAll = true
		u.emit(seg{kind: segQuote})
		i += 4
	case strings.HasPrefix(rest, "> "):
		u.emit(seg{kind: segQuote})
		i += 2
	case rest == ">" || strings.HasPrefix(rest, ">\n"):
		u.emit(seg{kind: segQuote})
		i++
	}
	rest = s[i:]
	for _, h := range [...]string{"# ", "## ", "### ", "-# "} {
		if strings.HasPrefix(rest, h) {
			return i + len(h)
		}
	}
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if strings.HasPrefix(s[j:], "- ") || strings.HasPrefix(s[j:], "* ") {
		u.addString(s[i:j] + "• ")
		return j + 2
	}
	return i
}

// discordCodeBlock reads ```code``` at the start of rest and returns its
// length.
func (u *unrenderer) discordCodeBlock(rest string) int {
	end := strings.Index(rest[3:], "```")
	if end < 0 {
		u.addString("```")
		return 3
	}
	body := rest[3 : 3+end]
	if nl := strings.IndexByte(body, '\n'); nl > 0 && isLang(body[:nl]) {
		body = body[nl+1:]
	}
	body = strings.Trim(body, "\n")
	if body == "" {
		u.addString(rest[:3+end+3])
	} else {
		u.emit(seg{kind: segPre, text: body})
	}
	return 3 + end + 3
}

// discordCode reads `code` or “code“ at the start of rest.
func (u *unrenderer) discordCode(rest string) int {
	n := 0
	for n < len(rest) && rest[n] == '`' {
		n++
	}
	fence := rest[:n]
	for j := n; j < len(rest); {
		k := strings.Index(rest[j:], fence)
		if k < 0 {
			break
		}
		k += j
		run := k
		for run < len(rest) && rest[run] == '`' {
			run++
		}
		if run-k == n && k > n && rest[k-1] != '`' {
			body := rest[n:k]
			if strings.HasPrefix(body, " ") && strings.HasPrefix(strings.TrimLeft(body, " "), "`") {
				body = body[1:]
			}
			if strings.HasSuffix(body, " ") && strings.HasSuffix(strings.TrimRight(body, " "), "`") {
				body = body[:len(body)-1]
			}
			u.emit(seg{kind: segCode, text: body})
			return k + n
		}
		j = run
	}
	u.addString(fence)
	return n
}

// discordLink reads [text](url) at the start of rest and returns its
// length, or 0 if it is not a link.
func (u *unrenderer) discordLink(rest string) int {
	depth, j := 0, 1
	for ; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			j++
		case '[':
			depth++
		case ']':
			depth--
		}
		if depth < 0 {
			break
		}
	}
	if j >= len(rest) || !strings.HasPrefix(rest[j:], "](") {
		return 0
	}
	text := rest[1:j]
	k := j + 2
	parens := 0
	var url strings.Builder
	for ; k < len(rest); k++ {
		c := rest[k]
		if c == '\\' && k+1 < len(rest) {
			k++
			url.WriteByte(rest[k])
			continue
		}
		if c == '(' {
			parens++
		}
		if c == ')' {
			if parens == 0 {
				break
			}
			parens--
		}
		url.WriteByte(c)
	}
	target := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(url.String()), "<"), ">")
	if k >= len(rest) || !isWebURL(target) || text == "" {
		return 0
	}
	inner := &unrenderer{}
	inner.discord(text, false)
	inner.flush()
	u.emit(seg{kind: segLink, text: segsText(inner.segs), url: target})
	return k + 1
}

// slack reads Slack mrkdwn.
func (u *unrenderer) slack(s string, lineStart bool) {
	closer := newSlackCloser(s)
	for i := 0; i < len(s); {
		c := s[i]
		if lineStart {
			lineStart = false
			if c == '>' {
				u.emit(seg{kind: segQuote})
				i++
				if i < len(s) && s[i] == ' ' {
					i++
				}
				continue
			}
		}
		switch {
		case c == '\n':
			u.add(c)
			i++
			lineStart = true
			continue
		case c == '&':
			if r, n := slackEntity(s[i:]); n > 0 {
				u.addString(r)
				i += n
				continue
			}
		case c == '<':
			if n := u.slackRef(s[i:]); n > 0 {
				i += n
				continue
			}
		case strings.HasPrefix(s[i:], zwsp):
			i += len(zwsp)
			continue
		case strings.HasPrefix(s[i:], "```"):
			if end := strings.Index(s[i+3:], "```"); end > 0 {
				body := strings.TrimSuffix(strings.TrimPrefix(s[i+3:i+3+end], "\n"), "\n")
				u.emit(seg{kind: segPre, text: unescapeCode(slack, body)})
				i += 3 + end + 3
				continue
			}
		case c == '`':
			if end := strings.IndexAny(s[i+1:], "`\n"); end > 0 && s[i+1+end] == '`' {
				u.emit(seg{kind: segCode, text: unescapeCode(slack, s[i+1:i+1+end])})
				i += end + 2
				continue
			}
		case c == '*' || c == '_' || c == '~':
			if n := u.slackEmphasis(s, i, closer); n > 0 {
				i += n
				continue
			}
		}
		u.add(c)
		i++
	}
}

// slackEmphasis reads *bold*, _italic_ or ~strike~ at s[i] and returns
// its length, or 0 if there is none.
func (u *unrenderer) slackEmphasis(s string, i int, c *slackCloser) int {
	n := c.spanLen(i)
	if n > 0 {
		u.slack(s[i+1:i+n-1], false)
	}
	return n
}

// slackCloser finds the *bold*, _italic_ and ~strike~ spans Slack reads
// in s: their markers must sit at word boundaries, on one line. Spans are
// asked for at ever later places, so each search for a closing marker
// goes on from where the last stopped and s is read about once per
// marker, however many markers never close.
type slackCloser struct {
	s string
	// For each marker: the search has read s[from:to]; at is the closing
	// marker it found there (to is just after it), or -1 if there is none
	// before to (a line end or the end of s).
	from, to, at [3]int
}

func newSlackCloser(s string) *slackCloser {
	return &slackCloser{s: s, at: [3]int{-1, -1, -1}}
}

// spanLen is the length of the span at s[i], or 0 if Slack reads none.
func (c *slackCloser) spanLen(i int) int {
	s := c.s
	k := strings.IndexByte("*_~", s[i])
	if prev, _ := utf8.DecodeLastRuneInString(s[:i]); i > 0 && isWordRune(prev) {
		return 0
	}
	if i+1 >= len(s) || unicode.IsSpace(rune(s[i+1])) {
		return 0
	}
	lo := i + 2
	if lo < c.from[k] || lo >= c.to[k] && c.at[k] >= 0 || lo > c.to[k] {
		c.from[k], c.at[k] = lo, -1
		j := lo
		for ; j < len(s) && s[j] != '\n'; j++ {
			if s[j] != s[i] || unicode.IsSpace(rune(s[j-1])) {
				continue
			}
			if next, _ := utf8.DecodeRuneInString(s[j+1:]); j+1 < len(s) && isWordRune(next) {
				continue
			}
			c.at[k] = j
			j++
			break
		}
		c.to[k] = j
	}
	if c.at[k] < lo {
		return 0
	}
	return c.at[k] + 1 - i
}

// slackSpans are the stretches of s (start, end) that Slack reads as one
// construct: a reference, pre, code or an emphasis. mrkdwn has no escapes,
// so text may hold markers that Slack pairs up; cutting between them
// would show them.
func slackSpans(s string) [][2]int {
	var out [][2]int
	closer := newSlackCloser(s)
	for i := 0; i < len(s); {
		n := 0
		switch c := s[i]; {
		case c == '&':
			if _, e := slackEntity(s[i:]); e > 0 {
				i += e
				continue
			}
		case c == '<':
			if end := strings.IndexAny(s[i:], ">\n"); end >= 2 && s[i+end] == '>' {
				n = end + 1
			}
		case strings.HasPrefix(s[i:], "```"):
			if end := strings.Index(s[i+3:], "```"); end > 0 {
				n = 3 + end + 3
			}
		case c == '`':
			if end := strings.IndexAny(s[i+1:], "`\n"); end > 0 && s[i+1+end] == '`' {
				n = end + 2
			}
		case c == '*' || c == '_' || c == '~':
			n = closer.spanLen(i)
		}
		if n > 0 {
			out = append(out, [2]int{i, i + n})
			i += n
			continue
		}
		i++
	}
	return out
}

// slackRef reads a <...> reference at the start of rest.
func (u *unrenderer) slackRef(rest string) int {
	end := strings.IndexAny(rest, ">\n")
	if end < 2 || rest[end] != '>' {
		return 0
	}
	target, label, hasLabel := strings.Cut(rest[1:end], "|")
	switch {
	case strings.HasPrefix(target, "@"):
		u.addString(target)
	case strings.HasPrefix(target, "#"):
		if hasLabel {
			u.addString("#" + unescapeSlack(label))
		} else {
			u.addString(target)
		}
	case strings.HasPrefix(target, "!"):
		u.addString("@" + strings.TrimPrefix(target, "!"))
	default:
		if !hasLabel || label == "" {
			label = target
		}
		u.emit(seg{kind: segLink, text: unescapeSlack(label), url: unescapeSlack(target)})
	}
	return end + 1
}

func slackEntity(s string) (string, int) {
	for _, e := range [...][2]string{{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}} {
		if strings.HasPrefix(s, e[0]) {
			return e[1], len(e[0])
		}
	}
	return "", 0
}

// unescapeCode is the visible text of a line of code as written in f.
func unescapeCode(f flavor, s string) string {
	switch f {
	case telegram:
		if strings.IndexByte(s, '\\') < 0 {
			return s
		}
		b := make([]byte, 0, len(s))
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) && s[i+1] > 0 && s[i+1] <= 126 {
				i++
			}
			b = append(b, s[i])
		}
		return string(b)
	case slack:
		return unescapeSlack(strings.ReplaceAll(s, zwsp, ""))
	}
	return s
}

// unescapeSlack resolves the three entities Slack's mrkdwn has.
func unescapeSlack(s string) string {
	if strings.IndexByte(s, '&') < 0 {
		return s
	}
	return slackUnescaper.Replace(s)
}

var slackUnescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func isWebURL(s string) bool {
	return len(s) > 8 && strings.EqualFold(s[:8], "https://") || len(s) > 7 && strings.EqualFold(s[:7], "http://")
}

// isLang reports whether s can be a code block's language on Discord.
func isLang(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-.#", c) >= 0) {
			return false
		}
	}
	return s != ""
}
