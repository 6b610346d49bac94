package promise

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// span is a half-open byte range [b, e) of the reply.
type span struct{ b, e int }

// lower lower-cases s without changing any byte offset: a rune whose lower
// case is longer or shorter in UTF-8 (rare: İ, ẞ) is kept as it is, so a
// span found in the result cuts the same words out of s.
func lower(s string) []byte {
	out := make([]byte, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			out[i] = c
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if l := unicode.ToLower(r); l != r && utf8.RuneLen(l) == n {
			utf8.EncodeRune(out[i:], l)
		} else {
			copy(out[i:i+n], s[i:i+n])
		}
		i += n
	}
	return out
}

// quotes pairs each opening quotation mark with the one that closes it.
var quotes = []struct{ open, close string }{
	{"```", "```"}, {"`", "`"}, {`"`, `"`}, {"“", "”"}, {"„", "“"},
	{"«", "»"}, {"「", "」"}, {"『", "』"},
}

// mask blanks code, quotations and block-quoted lines in place: words the
// bot quotes or shows as code are not the bot promising anything.
func mask(b []byte) {
	lineStart := true
	for i := 0; i < len(b); i++ {
		c := b[i]
		if lineStart && c == '>' {
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				j = len(b) - i
			}
			blank(b[i : i+j])
			i += j - 1
			continue
		}
		if c == '\n' {
			lineStart = true
			continue
		}
		if c != ' ' && c != '\t' {
			lineStart = false
		}
		if c != '`' && c != '"' && c < utf8.RuneSelf {
			continue
		}
		for _, q := range quotes {
			if !bytes.HasPrefix(b[i:], []byte(q.open)) {
				continue
			}
			if end := closing(b, i+len(q.open), q.close); end > 0 {
				blank(b[i:end])
				i = end - 1
			}
			break
		}
	}
}

// maxQuote is the longest quotation, in bytes, that is masked.
const maxQuote = 400

// closing finds where a quotation opened before from closes (the index
// after the mark), or 0: code may run long, other quotes stay in a line.
func closing(b []byte, from int, mark string) int {
	rest := b[from:]
	if mark != "```" && len(rest) > maxQuote {
		// Looking further would make a reply of many lone quotes quadratic.
		rest = rest[:maxQuote]
	}
	j := bytes.Index(rest, []byte(mark))
	if j < 0 || (mark != "```" && bytes.IndexByte(rest[:j], '\n') >= 0) {
		return 0
	}
	return from + j + len(mark)
}

func blank(b []byte) {
	for i := range b {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
}

// forSentences calls fn with each sentence's range, its end mark included
// (a question is judged by it), until fn returns true.
func forSentences(b []byte, fn func(s, e int) bool) {
	s := 0
	for i := 0; i < len(b); {
		c := b[i]
		n := 1
		end := false
		switch {
		case c == '.':
			end = !(i > 0 && i+1 < len(b) && isDigit(b[i-1]) && isDigit(b[i+1]))
		case c == '!' || c == '?' || c == ';' || c == '\n':
			end = true
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[i:])
			n = size
			end = r == '。' || r == '！' || r == '？' || r == '；' || r == '…'
		}
		i += n
		if end {
			if fn(s, i) {
				return
			}
			s = i
		}
	}
	if s < len(b) {
		fn(s, len(b))
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isQuestion says whether the sentence asks rather than states.
func isQuestion(b []byte) bool {
	return bytes.IndexByte(b, '?') >= 0 || bytes.Contains(b, []byte("？")) || bytes.Contains(b, []byte("¿"))
}

// hasHan says whether b holds a Chinese character.
func hasHan(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if unicode.Is(unicode.Han, r) {
			return true
		}
		i += n
	}
	return false
}

// tokenize appends the words of b[s:e] to toks: letters and digits, with
// an apostrophe inside a word ("i'll", "t'écrirai") and a colon inside a
// clock time ("17:00") kept. Han characters are left to the Chinese stage.
func tokenize(b []byte, s, e int, toks []span) []span {
	start := -1
	for i := s; i < e; {
		r, n := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, n = utf8.DecodeRune(b[i:e])
		}
		word := r < utf8.RuneSelf && (('a' <= r && r <= 'z') || ('0' <= r && r <= '9'))
		if !word && r >= utf8.RuneSelf {
			word = unicode.IsLetter(r) && !unicode.Is(unicode.Han, r) || unicode.IsDigit(r)
		}
		if !word && start >= 0 && (r == '\'' || r == '’' || r == ':') && i+n < e && isWordByte(b[i+n]) {
			word = true
		}
		if word && start < 0 {
			start = i
		} else if !word && start >= 0 {
			toks = append(toks, span{start, i})
			start = -1
		}
		i += n
	}
	if start >= 0 {
		toks = append(toks, span{start, e})
	}
	return toks
}

// isWordByte is a cheap look at the byte after an apostrophe or colon: a
// letter, a digit or the first byte of a non-ASCII rune.
func isWordByte(c byte) bool {
	return ('a' <= c && c <= 'z') || isDigit(c) || c >= 0xC0
}
