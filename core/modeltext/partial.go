package modeltext

import (
	"strings"
	"unicode/utf8"
)

// Partial returns what of raw, the whole text a model has written so far
// in a streamed answer, may be shown to the user now. It holds back
// whatever the rest of the answer could still turn into something hidden:
//
//   - reasoning: a block never shows, and one not closed yet hides all
//     that follows its opening tag;
//   - a tag or control token not finished yet ("<", "<thi", "< SIL",
//     "</WANT_M"), until it is known not to be one; a tag between
//     backticks waits for the character after it;
//   - a token and its <PROACTIVE> object, and the lines they leave blank,
//     as ParseTokens removes them; an object not finished yet hides all
//     after its token;
//   - trailing white space, and a character whose bytes are not all there.
//
// An answer that is a silence (<SILENCE> and nothing visible) shows
// nothing at all on the way, not even its "<".
//
// The guarantee: for every answer R the text the user finally sees is
// Clean(R) (what the turn shows of a whole answer: StripReasoning, then
// ParseTokens' text; "" for a silence), and for every prefix P of R, cut
// at any byte, Partial(P) is a prefix of Clean(R): nothing shown is ever
// contradicted by the finished reply. A longer prefix shows at least what
// a shorter one showed (FuzzPartial checks both).
//
// The one exception is an answer where StripReasoning meets a closing
// reasoning tag before any opening one (at any of its passes): it reads
// everything before that tag as reasoning whose opening tag the server
// dropped, and no partial text can know that before the tag comes; until
// then the text shows as the answer, and then it goes. A caller that
// knows its server drops the opening tag can pass "<think>"+raw: then
// nothing shows before the closing tag.
//
// Partial runs on every streamed delta, over the whole text: text without
// "<" costs a trim, and otherwise it is one StripReasoning and one
// ParseTokens.
func Partial(raw string) string {
	v := partialOnce(raw)
	// A tag still being written may turn out to open reasoning, which can
	// hide more than the tag itself (a follow-up's object then has no
	// line end after it): show only what both readings show, so that
	// what shows never shrinks when the tag is finished.
	if i := strings.LastIndexByte(raw, '<'); i >= 0 && pendingTag(raw[i:]) {
		if w := partialOnce(raw[:i] + "<think>"); !strings.HasPrefix(w, v) {
			n := 0
			for n < len(v) && n < len(w) && v[n] == w[n] {
				n++
			}
			for n > 0 && n < len(v) && !utf8.RuneStart(v[n]) {
				n--
			}
			// Cut at a character's start, v[:n] is followed by text
			// already: only its trailing space may still change (settled
			// would also take a last stray byte for a character cut
			// short, and what shows would shrink).
			v = strings.TrimSpace(v[:n])
		}
	}
	return v
}

// partialOnce is Partial for one reading of raw.
func partialOnce(raw string) string {
	if strings.IndexByte(raw, '<') < 0 {
		// The common case: nothing can be hidden.
		return settled(raw)
	}
	// The text is kept untrimmed until the end: white space after a
	// pending tag's name says the name is over.
	answer := withoutReasoning(raw)
	text := answer
	if toks := lex(answer); len(toks) > 0 {
		if t := &toks[len(toks)-1]; t.kind == kindProactive && !t.closing && t.obj == nil && objectMayFollow(answer, t.end) {
			// Its object may come yet: nothing after it shows before.
			t.end = len(answer)
		}
		// ParseTokens' text, untrimmed, knowing more may follow on the
		// last line: a token ending the text so far need not end its
		// line, and taking the spaces before it, as at a line's end,
		// could make what shows shrink.
		text = stripAll(remove(answer, toks, true), nil, true)
	}
	return settled(text[:pendingFrom(text)])
}

// withoutReasoning is StripReasoning's answer, untrimmed, but for a tag
// that may be between backticks ending it (at every pass: removing a
// block can make a tag).
func withoutReasoning(s string) string {
	for {
		s = s[:tagWaitsForBacktick(s)]
		a, _, changed := stripOnce(s)
		if !changed {
			return s
		}
		s = a
	}
}

// pendingFrom returns where the tags text ends with and that the rest of
// the answer may still finish begin, len(text) if none. One pending tag
// can sit inside another: in "<thi<" the last "<" may become a token
// whose removal makes "<thi" go on.
func pendingFrom(text string) int {
	end := len(text)
	i := strings.LastIndexByte(text, '<')
	if i < 0 || !pendingTag(text[i:]) {
		return end
	}
	for {
		end = i
		i = strings.LastIndexByte(text[:end], '<')
		if i < 0 || !pendingTag(text[i:end]) {
			return end
		}
	}
}

// settled is s without what may still change at its end: trailing white
// space (the final text is trimmed, and a token after it would take it)
// and the first bytes of a character cut short. Leading space goes too,
// as the final text has none. The cut character is looked for before
// trimming: a stray byte that trimming leaves at the end is followed by
// text already, so it is not the start of a character still coming.
func settled(s string) string {
	// At most the last 3 bytes can be the start of a character cut short.
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	return strings.TrimSpace(s)
}

// tagWaitsForBacktick returns where raw is to be cut so that a reasoning
// tag ending raw right after a backtick is not read yet: if the next
// character is a backtick, the tag is text about tags (StripReasoning
// leaves "`<think>`" alone), and reading it as a tag now could hide text
// that is to show, or show text before a closing tag that will not close.
func tagWaitsForBacktick(raw string) int {
	if !strings.HasSuffix(raw, ">") {
		return len(raw)
	}
	i := strings.LastIndexByte(raw, '<')
	if i <= 0 || raw[i-1] != '`' {
		return len(raw)
	}
	if t, ok := readTag(raw, i); ok && t.end == len(raw) {
		return i
	}
	return len(raw)
}

// pendingTag reports whether s, which starts with "<", is the beginning
// of a reasoning tag or of token-like text that the rest of the answer
// may finish: "<", spaces, an optional "/", spaces, a name that could
// still become one that counts, then only spaces or a "/" (never the ">"
// that would end it).
func pendingTag(s string) bool {
	i := skipSpaces(s, 1)
	if i < len(s) && s[i] == '/' {
		i = skipSpaces(s, i+1)
	}
	start := i
	for i < len(s) && isNameByte(s[i], i == start) {
		i++
	}
	name := s[start:i]
	if i == len(s) {
		// The name may go on.
		return name == "" || couldBeName(name)
	}
	if name == "" {
		return false
	}
	j := skipSpaces(s, i)
	slash := j < len(s) && s[j] == '/'
	if slash {
		j = skipSpaces(s, j+1)
	}
	if j < len(s) {
		return false // something else follows: never a tag
	}
	if !slash && isReasoningName(name) {
		return true
	}
	_, ok := classify(name)
	return ok && len(name) >= 3
}

// isNameByte reports whether c may be in a token's name at that place:
// an ASCII letter first, then letters, digits or "_".
func isNameByte(c byte, first bool) bool {
	letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	return letter || !first && (c >= '0' && c <= '9' || c == '_')
}

// couldBeName reports whether a name, more of which may follow, can still
// become a reasoning tag's or a token-like one: the beginning of a known
// name in any case, or with no lowercase letter (an unknown token is
// token-like when all uppercase).
func couldBeName(name string) bool {
	for _, known := range [...]string{"think", "thinking", "reasoning", "silence", "want_more", "proactive"} {
		if len(name) <= len(known) && strings.EqualFold(name, known[:len(name)]) {
			return true
		}
	}
	return strings.ToUpper(name) == name
}

func isReasoningName(name string) bool {
	for _, n := range reasoningNames {
		if strings.EqualFold(name, n) {
			return true
		}
	}
	return false
}
