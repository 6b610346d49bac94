package markuptest

import (
	"fmt"
	"strings"
)

// ParseError is markup Telegram refuses. Its message is what follows
// "Bad Request: can't parse entities: " in Telegram's answer.
type ParseError struct {
	Problem string
}

func (e *ParseError) Error() string { return e.Problem }

// tgEntity is an entity opened while parsing MarkdownV2 and not yet closed.
type tgEntity struct {
	kind       string // the name Telegram uses in its errors: "Bold", "Pre", ...
	byteOffset int    // where it started in the input, for error messages
	start      int    // where it started in the visible text
	lang       string
}

// tgStyles maps entity kinds to styles.
var tgStyles = map[string]Style{
	"Bold": Bold, "Italic": Italic, "Underline": Underline, "Strikethrough": Strike,
	"Spoiler": Spoiler, "Code": Code, "Pre": Pre, "PreCode": Pre, "TextUrl": Link,
}

// TelegramV2 reads text the way Telegram's MarkdownV2 parser does: the
// text a user reads (markup and escapes removed) with its entities, or a
// *ParseError with Telegram's message. It follows the structure of TDLib's
// parse_markdown_v2: a backslash escapes any ASCII character; outside code
// every one of _*[]()~`>#+-=|{}.! must be escaped unless it opens or
// closes an entity; inside code and pre only ` (and \) is special; inside
// a link's (...) only ) (and \). Consecutive lines starting with '>' are a
// block quote. Not checked: URL contents, custom emoji ids, expandable
// block quotes (**>).
func TelegramV2(text string) (Rendered, error) {
	p := &tgParser{text: text, quoteStart: -1}
	for ; p.i < len(text); p.i++ {
		if err := p.step(); err != nil {
			return Rendered{}, err
		}
	}
	if len(p.stack) > 0 {
		e := p.stack[len(p.stack)-1]
		return Rendered{}, tgError("Can't find end of %s entity at byte offset %d", e.kind, e.byteOffset)
	}
	p.endQuote()
	return p.b.result(), nil
}

// tgReserved are the characters MarkdownV2 wants escaped outside code.
const tgReserved = "_*[]()~`>#+-=|{}.!"

// tgParser is TelegramV2's state while it reads text.
type tgParser struct {
	text  string
	i     int // the byte being read
	b     builder
	stack []tgEntity
	// quoteStart is where the block quote being read starts in the
	// visible text; -1 outside one.
	quoteStart int
}

func tgError(format string, args ...any) error {
	return &ParseError{Problem: fmt.Sprintf(format, args...)}
}

func tgReservedError(c byte) error {
	return tgError("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
}

// at is the byte at i, 0 past the end.
func (p *tgParser) at(i int) byte {
	if i < len(p.text) {
		return p.text[i]
	}
	return 0
}

// escapes reports whether the byte at i is a backslash escaping the next.
func (p *tgParser) escapes(i int) bool {
	return p.text[i] == '\\' && p.at(i+1) > 0 && p.at(i+1) <= 126
}

// top is the kind of the innermost open entity, "" if none.
func (p *tgParser) top() string {
	if len(p.stack) == 0 {
		return ""
	}
	return p.stack[len(p.stack)-1].kind
}

func (p *tgParser) endQuote() {
	if p.quoteStart >= 0 {
		p.b.span(Span{Style: Quote, Start: p.quoteStart, End: p.b.pos()})
		p.quoteStart = -1
	}
}

// step reads the byte at p.i, and the rest of the marker it starts.
func (p *tgParser) step() error {
	c := p.text[p.i]
	if p.escapes(p.i) {
		p.i++
		p.b.out.WriteByte(p.text[p.i])
		return nil
	}
	top := p.top()
	inCode := top == "Code" || top == "Pre" || top == "PreCode"
	switch {
	case c == '\n':
		// A quote runs over the lines that start with '>'.
		if p.quoteStart >= 0 && (inCode || p.at(p.i+1) != '>') {
			p.endQuote()
		}
		p.b.out.WriteByte(c)
	case inCode && c != '`', !inCode && !strings.ContainsRune(tgReserved, rune(c)):
		p.b.out.WriteByte(c)
	case c == '>' && !inCode && (p.i == 0 || p.text[p.i-1] == '\n'):
		// A '>' at the start of a line opens a block quote line; the
		// marker itself is not part of the text.
		if p.quoteStart < 0 {
			p.quoteStart = p.b.pos()
		}
	case p.ends(c):
		return p.close()
	default:
		return p.open(c)
	}
	return nil
}

// ends reports whether c, at p.i, ends the innermost open entity.
func (p *tgParser) ends(c byte) bool {
	next := p.at(p.i + 1)
	switch p.top() {
	case "Bold":
		return c == '*'
	case "Italic":
		return c == '_' && next != '_'
	case "Underline":
		return c == '_' && next == '_'
	case "Strikethrough":
		return c == '~'
	case "Spoiler":
		return c == '|' && next == '|'
	case "Code":
		return c == '`'
	case "Pre", "PreCode":
		return c == '`' && next == '`' && p.at(p.i+2) == '`'
	case "TextUrl", "CustomEmoji":
		return c == ']'
	}
	return false
}

// open opens the entity whose marker starts with c at p.i, leaving p.i on
// the marker's last byte.
func (p *tgParser) open(c byte) error {
	start := p.i
	var kind, lang string
	switch c {
	case '_':
		kind = "Italic"
		if p.at(p.i+1) == '_' {
			kind = "Underline"
			p.i++
		}
	case '*':
		kind = "Bold"
	case '~':
		kind = "Strikethrough"
	case '|':
		if p.at(p.i+1) != '|' {
			return tgReservedError(c)
		}
		kind = "Spoiler"
		p.i++
	case '[':
		kind = "TextUrl"
	case '!':
		if p.at(p.i+1) != '[' {
			return tgReservedError(c)
		}
		kind = "CustomEmoji"
		p.i++
	case '`':
		kind, lang = p.openCode()
	default:
		return tgReservedError(c)
	}
	p.stack = append(p.stack, tgEntity{kind: kind, byteOffset: start, start: p.b.pos(), lang: lang})
	return nil
}

// openCode reads the opening of inline code (`) or of a pre block
// (```lang and one line break), leaving p.i on its last byte.
func (p *tgParser) openCode() (kind, lang string) {
	text := p.text
	if p.at(p.i+1) != '`' || p.at(p.i+2) != '`' {
		return "Code", ""
	}
	kind = "Pre"
	i := p.i + 3
	langEnd := i
	for langEnd < len(text) && !isSpace(text[langEnd]) && text[langEnd] != '`' {
		langEnd++
	}
	if langEnd != i && langEnd < len(text) && text[langEnd] != '`' {
		kind, lang = "PreCode", text[i:langEnd]
		i = langEnd
	}
	// One line break after the opening fence is not part of the code.
	if p.at(i) == '\n' || p.at(i) == '\r' {
		if (p.at(i+1) == '\n' || p.at(i+1) == '\r') && p.at(i) != p.at(i+1) {
			i += 2
		} else {
			i++
		}
	}
	p.i = i - 1
	return kind, lang
}

// close closes the innermost entity, whose end marker starts at p.i,
// leaving p.i on the marker's last byte (a link's closing parenthesis).
func (p *tgParser) close() error {
	e := p.stack[len(p.stack)-1]
	sp := Span{Style: tgStyles[e.kind], Start: e.start, End: p.b.pos(), Language: e.lang}
	switch e.kind {
	case "Underline", "Spoiler":
		p.i++
	case "Pre", "PreCode":
		p.i += 2
	case "TextUrl", "CustomEmoji":
		if p.at(p.i+1) != '(' {
			if e.kind == "CustomEmoji" {
				return tgError("Custom emoji entity must contain a tg://emoji URL")
			}
			sp.URL = p.b.out.String()[e.start:] // the link text is its own URL
			break
		}
		url, err := p.readURL()
		if err != nil {
			return err
		}
		sp.URL = url
	}
	p.stack = p.stack[:len(p.stack)-1]
	if e.kind != "CustomEmoji" {
		p.b.span(sp)
	}
	return nil
}

// readURL reads the "(url)" after a link's "]" at p.i, leaving p.i on
// the closing parenthesis.
func (p *tgParser) readURL() (string, error) {
	p.i += 2
	urlStart := p.i
	var url strings.Builder
	for p.i < len(p.text) && p.text[p.i] != ')' {
		if p.escapes(p.i) {
			p.i++
		}
		url.WriteByte(p.text[p.i])
		p.i++
	}
	if p.at(p.i) != ')' {
		return "", tgError("Can't find end of a URL at byte offset %d", urlStart)
	}
	return url.String(), nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
