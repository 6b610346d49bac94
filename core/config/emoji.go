package config

import (
	"unicode"
	"unicode/utf8"
)

// maxEmojiRunes bounds one emoji: the longest sequences in use (a family
// joined by zero-width joiners, a flag of tags) have about this many.
const maxEmojiRunes = 12

// isEmoji reports whether s looks like one emoji: one symbol, or symbols
// joined by zero-width joiners, with the marks that shape them (variation
// selectors, skin tones, keycaps, tags) or a flag's two regional
// indicators; no letters, spaces or words like ":eyes:". Platforms decide
// which emoji they accept; this catches a typo in the file.
func isEmoji(s string) bool {
	n := utf8.RuneCountInString(s)
	if !utf8.ValidString(s) || n == 0 || n > maxEmojiRunes {
		return false
	}
	symbols, joined, flag := 0, false, 0
	for i, r := range s {
		switch {
		case isRegionalIndicator(r):
			flag++
			if flag == 1 {
				symbols++
			}
		case unicode.Is(unicode.So, r):
			if symbols > 0 && !joined {
				return false // a second emoji
			}
			symbols++
		case unicode.Is(unicode.Sk, r) && r > unicode.MaxASCII: // skin tones
			if symbols == 0 {
				return false
			}
		case r == '\u20e3': // keycap: "1️⃣"
			if i == 0 {
				return false
			}
			symbols++
		case r == '\u200d':
			joined = true
			continue
		case r == '\ufe0f', r == '\ufe0e', r >= 0xe0020 && r <= 0xe007f:
			// variation selectors, tags
		case i == 0 && (r == '#' || r == '*' || r >= '0' && r <= '9'):
			// a keycap's base
		default:
			return false
		}
		joined = false
	}
	return symbols > 0 && flag <= 2
}

func isRegionalIndicator(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }
