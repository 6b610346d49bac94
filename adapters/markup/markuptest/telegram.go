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
	const reserved = "_*[]()~`>#+-=|{}.!"
	at := func(i int) byte {
		if i < len(text) {
			return text[i]
		}
		return 0
	}
	fail := func(format string, args ...any) (Rendered, error) {
		return Rendered{}, &ParseError{Problem: fmt.Sprintf(format, args...)}
	}
	reservedErr := func(c byte) (Rendered, error) {
		return fail("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	var b builder
	var stack []tgEntity
	top := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].kind
	}
	quoteStart := -1
	endQuote := func() {
		if quoteStart >= 0 {
			b.span(Span{Style: Quote, Start: quoteStart, End: b.pos()})
			quoteStart = -1
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\\' && at(i+1) > 0 && at(i+1) <= 126 {
			i++
			b.out.WriteByte(text[i])
			continue
		}
		inCode := top() == "Code" || top() == "Pre" || top() == "PreCode"
		if c == '\n' {
			// A quote runs over the lines that start with '>'.
			if quoteStart >= 0 && (inCode || at(i+1) != '>') {
				endQuote()
			}
			b.out.WriteByte(c)
			continue
		}
		if inCode {
			if c != '`' {
				b.out.WriteByte(c)
				continue
			}
		} else if !strings.ContainsRune(reserved, rune(c)) {
			b.out.WriteByte(c)
			continue
		}
		// A '>' at the start of a line opens a block quote line; the marker
		// itself is not part of the text.
		if c == '>' && !inCode && (i == 0 || text[i-1] == '\n') {
			if quoteStart < 0 {
				quoteStart = b.pos()
			}
			continue
		}
		isEnd := false
		switch top() {
		case "Bold":
			isEnd = c == '*'
		case "Italic":
			isEnd = c == '_' && at(i+1) != '_'
		case "Underline":
			isEnd = c == '_' && at(i+1) == '_'
		case "Strikethrough":
			isEnd = c == '~'
		case "Spoiler":
			isEnd = c == '|' && at(i+1) == '|'
		case "Code":
			isEnd = c == '`'
		case "Pre", "PreCode":
			isEnd = c == '`' && at(i+1) == '`' && at(i+2) == '`'
		case "TextUrl", "CustomEmoji":
			isEnd = c == ']'
		}
		if !isEnd {
			start := i
			var kind, lang string
			switch c {
			case '_':
				kind = "Italic"
				if at(i+1) == '_' {
					kind = "Underline"
					i++
				}
			case '*':
				kind = "Bold"
			case '~':
				kind = "Strikethrough"
			case '|':
				if at(i+1) != '|' {
					return reservedErr(c)
				}
				kind = "Spoiler"
				i++
			case '[':
				kind = "TextUrl"
			case '!':
				if at(i+1) != '[' {
					return reservedErr(c)
				}
				kind = "CustomEmoji"
				i++
			case '`':
				if at(i+1) != '`' || at(i+2) != '`' {
					kind = "Code"
					break
				}
				kind = "Pre"
				i += 3
				langEnd := i
				for langEnd < len(text) && !isSpace(text[langEnd]) && text[langEnd] != '`' {
					langEnd++
				}
				if langEnd != i && langEnd < len(text) && text[langEnd] != '`' {
					kind, lang = "PreCode", text[i:langEnd]
					i = langEnd
				}
				// One line break after the opening fence is not part of the code.
				if at(i) == '\n' || at(i) == '\r' {
					if (at(i+1) == '\n' || at(i+1) == '\r') && at(i) != at(i+1) {
						i += 2
					} else {
						i++
					}
				}
				i--
			default:
				return reservedErr(c)
			}
			stack = append(stack, tgEntity{kind: kind, byteOffset: start, start: b.pos(), lang: lang})
			continue
		}
		e := stack[len(stack)-1]
		sp := Span{Style: tgStyles[e.kind], Start: e.start, End: b.pos(), Language: e.lang}
		switch e.kind {
		case "Underline", "Spoiler":
			i++
		case "Pre", "PreCode":
			i += 2
		case "TextUrl", "CustomEmoji":
			if at(i+1) != '(' {
				if e.kind == "CustomEmoji" {
					return fail("Custom emoji entity must contain a tg://emoji URL")
				}
				sp.URL = b.out.String()[e.start:] // the link text is its own URL
				break
			}
			i += 2
			urlStart := i
			var url strings.Builder
			for i < len(text) && text[i] != ')' {
				if text[i] == '\\' && at(i+1) > 0 && at(i+1) <= 126 {
					i++
				}
				url.WriteByte(text[i])
				i++
			}
			if at(i) != ')' {
				return fail("Can't find end of a URL at byte offset %d", urlStart)
			}
			sp.URL = url.String()
		}
		stack = stack[:len(stack)-1]
		if e.kind != "CustomEmoji" {
			b.span(sp)
		}
	}
	if len(stack) > 0 {
		e := stack[len(stack)-1]
		return fail("Can't find end of %s entity at byte offset %d", e.kind, e.byteOffset)
	}
	endQuote()
	return b.result(), nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
