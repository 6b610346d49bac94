package markuptest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Discord reads message content the way Discord's client shows it
// (its simple-markdown rules): \ escapes any character that is not a
// letter, digit or space; **bold**, *italic* and _italic_ (at word
// boundaries), __underline__, ~~strike~~, ||spoiler||, `code` and
// “code“, ```lang code blocks```, [masked](https://links), bare and
// <bracketed> URLs; at a line start "> " quotes the line, ">>> " the rest
// of the message, "# " to "### " make a heading, "-# " small text, "- "
// and "* " a list item (shown as "• "). Mentions (<@id>) stay as written.
func Discord(content string) Rendered {
	var b builder
	p := &discordParser{b: &b, headingStart: -1}
	p.blocks(content)
	return b.result()
}

type discordParser struct {
	b            *builder
	headingStart int
}

// blocks reads content as Discord does: quoted lines first (their
// markers removed, their text read as a message of its own), then the
// text between quotes.
func (p *discordParser) blocks(content string) {
	lines := strings.Split(content, "\n")
	for i := 0; i < len(lines); {
		if i > 0 {
			p.b.out.WriteByte('\n')
		}
		j := i
		var inner []string
		switch {
		case strings.HasPrefix(lines[i], ">>> "):
			inner = append([]string{lines[i][4:]}, lines[i+1:]...)
			j = len(lines)
		case strings.HasPrefix(lines[i], "> ") || lines[i] == ">":
			for ; j < len(lines) && (strings.HasPrefix(lines[j], "> ") || lines[j] == ">"); j++ {
				inner = append(inner, strings.TrimPrefix(strings.TrimPrefix(lines[j], ">"), " "))
			}
		default:
			for ; j < len(lines) && !strings.HasPrefix(lines[j], "> ") && lines[j] != ">"; j++ {
			}
			p.parse(strings.Join(lines[i:j], "\n"), true)
			p.endLine()
			i = j
			continue
		}
		start := p.b.pos()
		p.parse(strings.Join(inner, "\n"), true)
		p.endLine()
		p.b.span(Span{Style: Quote, Start: start, End: p.b.pos()})
		i = j
	}
}

func (p *discordParser) endLine() {
	if p.headingStart >= 0 {
		p.b.span(Span{Style: Heading, Start: p.headingStart, End: p.b.pos()})
		p.headingStart = -1
	}
}

// lineStart reads the block markers at the start of a line and returns
// where its text begins.
func (p *discordParser) lineStart(s string, i int) int {
	rest := s[i:]
	for _, h := range []string{"# ", "## ", "### "} {
		if strings.HasPrefix(rest, h) {
			p.headingStart = p.b.pos()
			return i + len(h)
		}
	}
	if strings.HasPrefix(rest, "-# ") {
		return i + 3
	}
	j := i
	for j < len(s) && s[j] == ' ' {
		j++
	}
	if strings.HasPrefix(s[j:], "- ") || strings.HasPrefix(s[j:], "* ") {
		p.b.out.WriteString(s[i:j] + "• ")
		return j + 2
	}
	return i
}

// parse reads s, which starts a line when lineStart is set.
func (p *discordParser) parse(s string, lineStart bool) {
	for i := 0; i < len(s); {
		if lineStart {
			lineStart = false
			if i = p.lineStart(s, i); i >= len(s) {
				break
			}
		}
		c := s[i]
		if c == '\n' {
			p.endLine()
			p.b.out.WriteByte(c)
			i++
			lineStart = true
			continue
		}
		if n := p.construct(s, i); n > 0 {
			i += n
			continue
		}
		if c == '\\' && i+1 < len(s) {
			if r, size := utf8.DecodeRuneInString(s[i+1:]); !isASCIIAlnum(r) && !unicode.IsSpace(r) {
				p.b.out.WriteString(s[i+1 : i+1+size])
				i += 1 + size
				continue
			}
		}
		p.b.out.WriteByte(c)
		i++
	}
}

// construct reads an inline construct at s[i] and returns its length, or
// 0 when there is none.
func (p *discordParser) construct(s string, i int) int {
	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, "```"):
		return p.codeBlock(rest)
	case rest[0] == '`':
		return p.inlineCode(rest)
	case strings.HasPrefix(rest, "**"):
		if n := p.delimited(rest, "**", Bold, '*'); n > 0 {
			return n
		}
		return p.italicStar(rest)
	case strings.HasPrefix(rest, "__"):
		if n := p.delimited(rest, "__", Underline, '_'); n > 0 {
			return n
		}
		return p.italicUnderscore(s, i)
	case strings.HasPrefix(rest, "~~"):
		return p.delimited(rest, "~~", Strike, 0)
	case strings.HasPrefix(rest, "||"):
		return p.delimited(rest, "||", Spoiler, 0)
	case rest[0] == '*':
		return p.italicStar(rest)
	case rest[0] == '_':
		return p.italicUnderscore(s, i)
	case rest[0] == '[':
		return p.maskedLink(rest)
	case rest[0] == '<':
		if end := strings.IndexByte(rest, '>'); end > 0 && isWebURL(rest[1:end]) && !strings.ContainsAny(rest[1:end], " \n") {
			start := p.b.pos()
			p.b.out.WriteString(rest[1:end])
			p.b.span(Span{Style: Link, Start: start, End: p.b.pos(), URL: rest[1:end]})
			return end + 1
		}
	case i == 0 || !isWordByte(s[i-1]):
		if isWebURL(rest) {
			n := 0
			for n < len(rest) && !strings.ContainsRune(" \t\n<", rune(rest[n])) {
				n++
			}
			for n > 0 && strings.ContainsRune(`.,:;"')]`, rune(rest[n-1])) {
				n--
			}
			start := p.b.pos()
			p.b.out.WriteString(rest[:n])
			p.b.span(Span{Style: Link, Start: start, End: p.b.pos(), URL: rest[:n]})
			return n
		}
	}
	return 0
}

func (p *discordParser) codeBlock(rest string) int {
	end := strings.Index(rest[3:], "```")
	if end < 0 {
		return 0
	}
	body := rest[3 : 3+end]
	lang := ""
	if nl := strings.IndexByte(body, '\n'); nl > 0 && isLang(body[:nl]) {
		lang, body = body[:nl], body[nl+1:]
	}
	body = strings.Trim(body, "\n")
	if body == "" {
		return 0
	}
	start := p.b.pos()
	p.b.out.WriteString(body)
	p.b.span(Span{Style: Pre, Start: start, End: p.b.pos(), Language: lang})
	return 3 + end + 3
}

func (p *discordParser) inlineCode(rest string) int {
	n := 0
	for n < len(rest) && rest[n] == '`' {
		n++
	}
	fence := rest[:n]
	for j := n; j < len(rest); {
		k := strings.Index(rest[j:], fence)
		if k < 0 {
			return 0
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
			start := p.b.pos()
			p.b.out.WriteString(body)
			p.b.span(Span{Style: Code, Start: start, End: p.b.pos()})
			return k + n
		}
		j = run
	}
	return 0
}

// delimited reads marker content marker, where the closing marker is the
// first one (after at least one character, skipping escapes) that is not
// followed by notAfter.
func (p *discordParser) delimited(rest, marker string, st Style, notAfter byte) int {
	m := len(marker)
	for j := m + 1; j+m <= len(rest); {
		if rest[j] == '\\' && j+1 < len(rest) {
			_, size := utf8.DecodeRuneInString(rest[j+1:])
			j += 1 + size
			continue
		}
		if strings.HasPrefix(rest[j:], marker) && (j+m == len(rest) || notAfter == 0 || rest[j+m] != notAfter) {
			p.styled(rest[m:j], st, "")
			return j + m
		}
		j++
	}
	return 0
}

// italicStar reads *italic*: it starts before a non-space, may hold
// **bold**, and ends at a * that is not followed by another, after a
// non-space.
func (p *discordParser) italicStar(rest string) int {
	if len(rest) < 3 || isSpaceByte(rest[1]) {
		return 0
	}
	for j := 1; j < len(rest); {
		switch {
		case j > 1 && rest[j] == '*' && (j+1 == len(rest) || rest[j+1] != '*'):
			p.styled(rest[1:j], Italic, "")
			return j + 1
		case strings.HasPrefix(rest[j:], "**"):
			j += 2
		case rest[j] == '\\' && j+1 < len(rest):
			_, size := utf8.DecodeRuneInString(rest[j+1:])
			j += 1 + size
		case isSpaceByte(rest[j]):
			for j < len(rest) && isSpaceByte(rest[j]) {
				j++
			}
			if j == len(rest) || (rest[j] == '*' && !strings.HasPrefix(rest[j:], "**")) {
				return 0
			}
		case rest[j] == '*':
			return 0
		default:
			j++
		}
	}
	return 0
}

// italicUnderscore reads _italic_ between word boundaries.
func (p *discordParser) italicUnderscore(s string, i int) int {
	if i > 0 && isWordByte(s[i-1]) {
		return 0
	}
	rest := s[i:]
	for j := 1; j < len(rest); {
		switch {
		case strings.HasPrefix(rest[j:], "__"):
			j += 2
		case rest[j] == '\\' && j+1 < len(rest):
			_, size := utf8.DecodeRuneInString(rest[j+1:])
			j += 1 + size
		case rest[j] == '_':
			if j > 1 && (j+1 == len(rest) || !isWordByte(rest[j+1])) {
				p.styled(rest[1:j], Italic, "")
				return j + 1
			}
			return 0
		default:
			j++
		}
	}
	return 0
}

func (p *discordParser) maskedLink(rest string) int {
	depth, j := 0, 1
	for ; j < len(rest); j++ {
		c := rest[j]
		if c == '\\' {
			j++
			continue
		}
		if c == '[' {
			depth++
		}
		if c == ']' {
			if depth == 0 {
				break
			}
			depth--
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
	u := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(url.String()), "<"), ">")
	if k >= len(rest) || !isWebURL(u) || text == "" {
		return 0
	}
	p.styled(text, Link, u)
	return k + 1
}

// styled reads inner as the content of a span.
func (p *discordParser) styled(inner string, st Style, url string) {
	start := p.b.pos()
	p.parse(inner, false)
	p.b.span(Span{Style: st, Start: start, End: p.b.pos(), URL: url})
}

func isWebURL(s string) bool {
	return len(s) > 8 && strings.EqualFold(s[:8], "https://") || len(s) > 7 && strings.EqualFold(s[:7], "http://")
}

func isLang(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-.#", c) >= 0) {
			return false
		}
	}
	return s != ""
}

func isASCIIAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }
