package telegramtest

import (
	"fmt"
	"strings"
)

// mdEntity is an entity opened while parsing MarkdownV2 and not yet closed.
type mdEntity struct {
	kind       string // the name Telegram uses in its errors: "Bold", "Pre", ...
	byteOffset int    // where it started in the input, for error messages
}

// parseMarkdownV2 checks text the way Telegram's MarkdownV2 parser does and
// returns the text a user would read (markup and escapes removed). It follows
// the structure of TDLib's parse_markdown_v2: a backslash escapes any ASCII
// character; outside code every one of _*[]()~`>#+-=|{}.! must be escaped
// unless it opens or closes an entity; inside code and pre only ` is special.
// Not checked: URL contents, custom emoji ids, expandable block quotes (**>).
// problem, when not empty, is what follows "Bad Request: can't parse entities: ".
func parseMarkdownV2(text string) (plain, problem string) {
	const reserved = "_*[]()~`>#+-=|{}.!"
	at := func(i int) byte {
		if i < len(text) {
			return text[i]
		}
		return 0
	}
	reservedErr := func(c byte) string {
		return fmt.Sprintf("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	var out strings.Builder
	var stack []mdEntity
	top := func() string {
		if len(stack) == 0 {
			return ""
		}
		return stack[len(stack)-1].kind
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\\' && at(i+1) > 0 && at(i+1) <= 126 {
			i++
			out.WriteByte(text[i])
			continue
		}
		inCode := top() == "Code" || top() == "Pre" || top() == "PreCode"
		if inCode {
			if c != '`' {
				out.WriteByte(c)
				continue
			}
		} else if !strings.ContainsRune(reserved, rune(c)) {
			out.WriteByte(c)
			continue
		}
		// A '>' at the start of a line opens a block quote line; the marker
		// itself is not part of the text.
		if c == '>' && !inCode && (i == 0 || text[i-1] == '\n') {
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
			var kind string
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
					return "", reservedErr(c)
				}
				kind = "Spoiler"
				i++
			case '[':
				kind = "TextUrl"
			case '!':
				if at(i+1) != '[' {
					return "", reservedErr(c)
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
					kind = "PreCode"
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
				return "", reservedErr(c)
			}
			stack = append(stack, mdEntity{kind: kind, byteOffset: start})
			continue
		}
		kind := top()
		switch kind {
		case "Underline", "Spoiler":
			i++
		case "Pre", "PreCode":
			i += 2
		case "TextUrl", "CustomEmoji":
			if at(i+1) != '(' {
				if kind == "CustomEmoji" {
					return "", "Custom emoji entity must contain a tg://emoji URL"
				}
				break // the link text is its own URL
			}
			i += 2
			urlStart := i
			for i < len(text) && text[i] != ')' {
				if text[i] == '\\' && at(i+1) > 0 && at(i+1) <= 126 {
					i++
				}
				i++
			}
			if at(i) != ')' {
				return "", fmt.Sprintf("Can't find end of a URL at byte offset %d", urlStart)
			}
		}
		stack = stack[:len(stack)-1]
	}
	if len(stack) > 0 {
		e := stack[len(stack)-1]
		return "", fmt.Sprintf("Can't find end of %s entity at byte offset %d", e.kind, e.byteOffset)
	}
	return out.String(), ""
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}
