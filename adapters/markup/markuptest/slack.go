package markuptest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Slack reads a message's text the way Slack shows it. Always: &amp; &lt;
// &gt; are & < >, <url|label> and <url> are links, <@U1> is "@U1",
// <#C1|name> is "#name", <!here> is "@here". With mrkdwn (what
// chat.postMessage does unless mrkdwn is false) also: *bold*, _italic_
// and ~strike~ whose markers sit at word boundaries (a marker next to a
// letter or digit is literal: 2*3*4, snake_case), `code` within a line,
// ```pre``` and a line starting with ">" quoted. Zero-width spaces, which
// only keep markers apart, are left out of the text.
func Slack(text string, mrkdwn bool) Rendered {
	var b builder
	p := &slackParser{b: &b, mrkdwn: mrkdwn, quoteStart: -1}
	p.parse(text, true)
	p.endQuote(b.pos())
	return b.result()
}

type slackParser struct {
	b          *builder
	mrkdwn     bool
	quoteStart int
}

func (p *slackParser) endQuote(end int) {
	if p.quoteStart >= 0 {
		p.b.span(Span{Style: Quote, Start: p.quoteStart, End: end})
		p.quoteStart = -1
	}
}

func (p *slackParser) parse(s string, lineStart bool) {
	for i := 0; i < len(s); {
		if lineStart && p.mrkdwn {
			lineStart = false
			if s[i] == '>' {
				if p.quoteStart < 0 {
					p.quoteStart = p.b.pos()
				}
				i++
				if i < len(s) && s[i] == ' ' {
					i++
				}
				continue
			}
			if p.quoteStart >= 0 {
				p.endQuote(p.b.pos() - 1) // before the previous line's end
			}
		}
		c := s[i]
		switch {
		case c == '\n':
			p.b.out.WriteByte(c)
			i++
			lineStart = true
			continue
		case c == '&':
			if r, n := slackEntity(s[i:]); n > 0 {
				p.b.out.WriteString(r)
				i += n
				continue
			}
		case c == '<':
			if n := p.ref(s[i:]); n > 0 {
				i += n
				continue
			}
		case strings.HasPrefix(s[i:], zwsp):
			i += len(zwsp)
			continue
		case p.mrkdwn && strings.HasPrefix(s[i:], "```"):
			if end := strings.Index(s[i+3:], "```"); end > 0 {
				body := strings.TrimSuffix(strings.TrimPrefix(s[i+3:i+3+end], "\n"), "\n")
				p.code(body, Pre)
				i += 3 + end + 3
				continue
			}
		case p.mrkdwn && c == '`':
			if end := strings.IndexAny(s[i+1:], "`\n"); end > 0 && s[i+1+end] == '`' {
				p.code(s[i+1:i+1+end], Code)
				i += end + 2
				continue
			}
		case p.mrkdwn && (c == '*' || c == '_' || c == '~'):
			if n := p.emphasis(s, i); n > 0 {
				i += n
				continue
			}
		}
		p.b.out.WriteByte(c)
		i++
	}
}

const zwsp = "\u200b"

// code shows body verbatim but for entities and zero-width spaces.
func (p *slackParser) code(body string, st Style) {
	start := p.b.pos()
	body = strings.ReplaceAll(body, zwsp, "")
	for i := 0; i < len(body); {
		if r, n := slackEntity(body[i:]); n > 0 {
			p.b.out.WriteString(r)
			i += n
			continue
		}
		p.b.out.WriteByte(body[i])
		i++
	}
	p.b.span(Span{Style: st, Start: start, End: p.b.pos()})
}

// emphasis reads a *bold*, _italic_ or ~strike~ span at s[i].
func (p *slackParser) emphasis(s string, i int) int {
	m := s[i]
	if prev, _ := utf8.DecodeLastRuneInString(s[:i]); i > 0 && isWordRune(prev) {
		return 0
	}
	if i+1 >= len(s) || unicode.IsSpace(rune(s[i+1])) {
		return 0
	}
	for j := i + 2; j < len(s) && s[j] != '\n'; j++ {
		if s[j] != m || unicode.IsSpace(rune(s[j-1])) {
			continue
		}
		if next, _ := utf8.DecodeRuneInString(s[j+1:]); j+1 < len(s) && isWordRune(next) {
			continue
		}
		st := map[byte]Style{'*': Bold, '_': Italic, '~': Strike}[m]
		start := p.b.pos()
		p.parse(s[i+1:j], false)
		p.b.span(Span{Style: st, Start: start, End: p.b.pos()})
		return j + 1 - i
	}
	return 0
}

// ref reads a <...> reference.
func (p *slackParser) ref(rest string) int {
	end := strings.IndexAny(rest, ">\n")
	if end < 2 || rest[end] != '>' {
		return 0
	}
	target, label, hasLabel := strings.Cut(rest[1:end], "|")
	start := p.b.pos()
	switch {
	case strings.HasPrefix(target, "@"):
		p.b.out.WriteString(target)
	case strings.HasPrefix(target, "#"):
		if hasLabel {
			p.b.out.WriteString("#" + unescapeSlack(label))
		} else {
			p.b.out.WriteString(target)
		}
	case strings.HasPrefix(target, "!"):
		p.b.out.WriteString("@" + strings.TrimPrefix(target, "!"))
	default:
		url := unescapeSlack(target)
		if !hasLabel || label == "" {
			label = target
		}
		p.b.out.WriteString(unescapeSlack(label))
		p.b.span(Span{Style: Link, Start: start, End: p.b.pos(), URL: url})
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

func unescapeSlack(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(s)
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
