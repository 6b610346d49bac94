package modeltext

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MaxProactiveDelay is the longest follow-up delay; longer ones are clamped.
const MaxProactiveDelay = 7 * 24 * time.Hour

// MaxReasonRunes bounds a follow-up's reason.
const MaxReasonRunes = 500

// Parsed is model output with its control tokens read.
type Parsed struct {
	// Text is what may be shown to the user; it never holds token-like text.
	Text string
	// Silence is true when nothing is to be sent.
	Silence bool
	// WantMore is true when the model wants one continuation.
	WantMore bool
	// Proactive is a follow-up to schedule; nil when none.
	Proactive *Proactive
	// Notes say, one short line per token stripped or ignored, what
	// happened and why (for the logs and the run record).
	Notes []string
}

// Proactive is a request to write to the user first, later.
type Proactive struct {
	// Delay is how long after this reply to follow up.
	Delay time.Duration
	// Reason is the model's note to itself for the follow-up.
	Reason string
	// Clamped is true when the delay asked for was over MaxProactiveDelay.
	Clamped bool
}

// tokenRE matches token-like candidates; classify decides on the name.
var tokenRE = regexp.MustCompile(`<[ \t]*(/?)[ \t]*([A-Za-z][A-Za-z0-9_]{2,})[ \t]*/?[ \t]*>`)

type kind int

const (
	kindUnknown kind = iota
	kindSilence
	kindWantMore
	kindProactive
)

// token is one token-like span of the output.
type token struct {
	start, end int // the span removed, a PROACTIVE object included
	kind       kind
	closing    bool
	name       string
	// For an opening <PROACTIVE>: the object after it, or why there is none.
	obj    []byte
	objErr string
}

func (t token) known() bool { return t.kind != kindUnknown && !t.closing }

// String shows the token for notes; long names are cut so a note stays
// one short line.
func (t token) String() string {
	name := t.name
	if len(name) > 40 {
		name = name[:40] + "…"
	}
	if t.closing {
		return "</" + name + ">"
	}
	return "<" + name + ">"
}

// classify names a candidate's kind; ok is false when it is not token-like.
func classify(name string) (k kind, ok bool) {
	switch strings.ToUpper(name) {
	case "SILENCE":
		return kindSilence, true
	case "WANT_MORE":
		return kindWantMore, true
	case "PROACTIVE":
		return kindProactive, true
	}
	// Names are ASCII here, so ToUpper leaves them alone exactly when they
	// are all uppercase.
	return kindUnknown, name == strings.ToUpper(name)
}

// ContainsTokenLike reports whether s holds token-like text: a known token
// in any case, or an all-uppercase unknown or closing one (rule 1).
func ContainsTokenLike(s string) bool {
	for _, m := range tokenRE.FindAllStringSubmatchIndex(s, -1) {
		if _, ok := classify(s[m[4]:m[5]]); ok {
			return true
		}
	}
	return false
}

// lex finds the tokens of s in order, each <PROACTIVE> with its object.
func lex(s string) []token {
	var out []token
	for _, m := range tokenRE.FindAllStringSubmatchIndex(s, -1) {
		name := s[m[4]:m[5]]
		k, ok := classify(name)
		if !ok {
			continue
		}
		if len(out) > 0 && m[0] < out[len(out)-1].end {
			continue // inside the object of the <PROACTIVE> before
		}
		t := token{start: m[0], end: m[1], kind: k, closing: m[3] > m[2], name: name}
		if k != kindUnknown {
			t.name = strings.ToUpper(name)
		}
		if k == kindProactive && !t.closing {
			t.end, t.obj, t.objErr = readObject(s, t.end)
		}
		out = append(out, t)
	}
	return out
}

// readObject finds the JSON object that may follow a <PROACTIVE> ending
// at i. It returns where the token's span ends, and the object or why
// there is none.
func readObject(s string, i int) (end int, obj []byte, why string) {
	j := skipBlanks(s, i)
	// At most one line break: an object further down is the text's own.
	if strings.HasPrefix(s[j:], "\r\n") {
		j = skipBlanks(s, j+2)
	} else if strings.HasPrefix(s[j:], "\n") {
		j = skipBlanks(s, j+1)
	}
	if j >= len(s) || s[j] != '{' {
		return i, nil, "no JSON object after it"
	}
	// The Decoder finds where the object ends, strings and nesting included.
	dec := json.NewDecoder(strings.NewReader(s[j:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			// All that follows is the start of an object: none of it shows.
			return len(s), nil, "its JSON object is cut short"
		}
		if nl := strings.IndexByte(s[j:], '\n'); nl >= 0 {
			return j + nl, nil, "its JSON object is not valid"
		}
		return len(s), nil, "its JSON object is not valid"
	}
	return j + int(dec.InputOffset()), raw, ""
}

// objectMayFollow reports whether a <PROACTIVE> ending at i, in a text
// that goes on, may still get its object: only blanks and at most one
// line break follow it so far.
func objectMayFollow(s string, i int) bool {
	j := skipBlanks(s, i)
	switch {
	case strings.HasPrefix(s[j:], "\r\n"):
		j += 2
	case strings.HasPrefix(s[j:], "\n"), strings.HasPrefix(s[j:], "\r"):
		j++
	}
	return skipBlanks(s, j) == len(s)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlanks(s string, i int) int {
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return i
}

// request reads a <PROACTIVE> object strictly (rules 2 and 3). It returns
// the request, or why it is ignored.
func request(obj []byte) (*Proactive, string) {
	// A map rather than a struct: encoding/json would match struct fields
	// case-insensitively, and the fields are exact.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return nil, "its JSON is not an object"
	}
	var unknown []string
	for k := range fields {
		if k != "delay_seconds" && k != "reason" {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Sprintf("unknown field %.40q in its JSON", unknown[0])
	}
	lit := string(bytes.TrimSpace(fields["delay_seconds"]))
	if lit == "" || lit == "null" {
		return nil, "delay_seconds is missing"
	}
	// The object is valid JSON, so a leading '-' or digit means a number
	// ("60" as a string does not count).
	if lit[0] != '-' && (lit[0] < '0' || lit[0] > '9') {
		return nil, "delay_seconds is not a number"
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, "delay_seconds is not a number"
	}
	// Out of range is ±Inf: whole, and clamped or ignored below.
	if !math.IsInf(f, 0) && f != math.Trunc(f) {
		return nil, "delay_seconds is not a whole number"
	}
	var reason string
	if r, ok := fields["reason"]; ok {
		if err := json.Unmarshal(r, &reason); err != nil {
			return nil, "reason is not a string"
		}
	}
	if f <= 0 {
		return nil, "delay_seconds is not after now"
	}
	p := &Proactive{Reason: cleanReason(reason)}
	if f > MaxProactiveDelay.Seconds() {
		p.Delay, p.Clamped = MaxProactiveDelay, true
	} else {
		p.Delay = time.Duration(f) * time.Second
	}
	return p, ""
}

// cleanReason strips token-like text from a reason, trims it and bounds
// its length. Cutting a token-free string cannot make a token.
func cleanReason(r string) string {
	r = strings.TrimSpace(stripAll(r, nil, false))
	if utf8.RuneCountInString(r) > MaxReasonRunes {
		r = strings.TrimSpace(string([]rune(r)[:MaxReasonRunes]))
	}
	return r
}

// ParseTokens reads the control tokens of a model's output. Tokens are read
// only from model output: a user's text that holds them is ordinary text
// and never passes through here. The rules:
//
//  1. Token-like text is "<", an optional "/", then a name that starts
//     with an ASCII letter and goes on with ASCII letters, digits or "_",
//     at least 3 characters long, an optional "/" (a self-closing
//     "<SILENCE/>" is the token itself), then ">". Spaces just inside the
//     brackets are allowed ("< SILENCE >"). The known tokens are SILENCE,
//     WANT_MORE and PROACTIVE, in any case ("<silence>" is the same
//     token). Any other name is token-like only when it is ALL UPPERCASE,
//     so "<b>", "<br>", "<div>", "List<T>", "Map<K,V>", "Optional<String>"
//     and "a <3 b" are ordinary text and kept, while unknown ("<FOO_BAR>")
//     and closing ("</SILENCE>") tokens are stripped.
//  2. "<PROACTIVE>" may be followed, after spaces and at most one line
//     break, by a JSON object, which is part of the token and is removed
//     with it wherever it stands. The object is strict: exactly the fields
//     "delay_seconds" (required, a JSON number that is whole: 60 or 60.0)
//     and "reason" (optional, a string). No object, or a malformed one,
//     gets the token stripped and ignored. When the text after the token
//     starts with "{" but is not a complete JSON object, the token is
//     stripped through the end of the line the object starts on (through
//     the end of the output when the output ends inside the object), so
//     half an object never shows.
//  3. A delay of 0 or less is ignored; one over MaxProactiveDelay is
//     clamped to it. A reason is stripped of token-like text, trimmed and
//     cut to MaxReasonRunes runes.
//  4. Only the final control block is honoured: the last lines of the
//     output (trailing blank lines aside) that hold nothing but known
//     tokens separated by whitespace. There, WANT_MORE asks for a
//     continuation, PROACTIVE for a follow-up, SILENCE counts towards
//     silence. Each kind is honoured once; a repeat is ignored. A known
//     token anywhere else (amid the text, or on a line with text) is
//     stripped and ignored, except SILENCE (rule 5).
//  5. The reply is silent when the output holds a SILENCE token anywhere
//     and no visible text is left once every token is stripped. With
//     visible text the text is sent and SILENCE is ignored. An empty
//     output without SILENCE is not silent, its text is just empty.
//  6. WANT_MORE is honoured only when the reply is not silent and has
//     text. PROACTIVE is honoured even when silent: quiet now, a
//     follow-up later.
//  7. The text is the output with every token-like text (and PROACTIVE
//     object) removed, without the spaces a removal would leave around it
//     and without the lines a removal left blank, then trimmed. Other
//     whitespace and markdown stay as written.
//  8. Removing a token never makes a new one ("<SIL<ABC>ENCE>"): the text
//     is stripped again, innermost first, until nothing token-like is
//     left. Tokens made that way are stripped, never honoured.
//  9. ParseTokens never panics, whatever the input, invalid UTF-8 included.
//
// Every token stripped or ignored, and every clamped delay, leaves a note
// for the logs and the run record.
func ParseTokens(output string) Parsed {
	var p Parsed
	note := func(format string, args ...any) { p.Notes = append(p.Notes, fmt.Sprintf(format, args...)) }

	toks := lex(output)
	first := blockStart(output, toks)
	silences := 0
	wantMore := false
	var proactive *Proactive
	for i, t := range toks {
		switch {
		case t.closing:
			note("stripped closing token %s", t)
		case t.kind == kindUnknown:
			note("stripped unknown token %s", t)
		case t.kind == kindSilence:
			// Honoured anywhere, but only once the text is known (rule 5).
			silences++
		case i < first:
			note("ignored %s in the middle of the text", t)
		case t.kind == kindWantMore && wantMore:
			note("ignored a second <WANT_MORE>")
		case t.kind == kindWantMore:
			wantMore = true
		case t.obj == nil:
			note("ignored <PROACTIVE>: %s", t.objErr)
		case proactive != nil:
			note("ignored a second <PROACTIVE>")
		default:
			req, why := request(t.obj)
			if req == nil {
				note("ignored <PROACTIVE>: %s", why)
				break
			}
			proactive = req
			if req.Clamped {
				note("clamped the <PROACTIVE> delay to %s", MaxProactiveDelay)
			}
		}
	}

	// The tokens left after the removals were made by them (rule 8).
	text := stripAll(remove(output, toks, false), func(t token) { note("stripped %s, made by removing another token", t) }, false)
	p.Text = strings.TrimSpace(text)

	switch {
	case silences > 0 && p.Text == "":
		p.Silence = true
		for range silences - 1 {
			note("ignored a second <SILENCE>")
		}
	default:
		for range silences {
			note("ignored <SILENCE>: the reply has text")
		}
	}
	switch {
	case !wantMore:
	case p.Silence:
		note("ignored <WANT_MORE>: the reply is silent")
	case p.Text == "":
		note("ignored <WANT_MORE>: the reply has no text")
	default:
		p.WantMore = true
	}
	p.Proactive = proactive
	return p
}

// blockStart returns the index of the first token of the final control
// block: the trailing lines of s that hold only known tokens. It returns
// len(toks) when there is no such block.
func blockStart(s string, toks []token) int {
	pos := len(strings.TrimRightFunc(s, unicode.IsSpace))
	i := len(toks)
	for i > 0 {
		t := toks[i-1]
		if !t.known() || (t.end < pos && strings.TrimSpace(s[t.end:pos]) != "") {
			break
		}
		pos = t.start
		i--
	}
	// The block starts a line: the tokens of a line that has text before
	// them are not in it.
	for i < len(toks) {
		lineStart := strings.LastIndexByte(s[:toks[i].start], '\n') + 1
		if strings.TrimSpace(s[lineStart:toks[i].start]) == "" {
			break
		}
		i++
		for i < len(toks) && !strings.Contains(s[toks[i-1].end:toks[i].start], "\n") {
			i++
		}
	}
	return i
}

// remove cuts the spans of toks out of s, tidily (see cutter); open says
// s is the beginning of a text that goes on.
func remove(s string, toks []token, open bool) string {
	if len(toks) == 0 {
		return s
	}
	c := cutter{b: make([]byte, 0, len(s)), open: open}
	last := 0
	for _, t := range toks {
		c.b = append(c.b, s[last:t.start]...)
		last = t.end + c.cut(s[t.end:])
	}
	c.b = append(c.b, s[last:]...)
	return c.text()
}

// stripAll removes every token-like text from s, a <PROACTIVE> with its
// object, honouring nothing; each (when not nil) is told of every token;
// open says s is the beginning of a text that goes on.
//
// Removing a token can make a new one ("<SIL<ABC>ENCE>"), so rather than
// repeating passes, one per level of nesting, it reads s once, innermost
// first: b never holds token-like text, since only an appended ">" can
// close one, and then only from the last "<" that may still open one.
func stripAll(s string, each func(token), open bool) string {
	c := cutter{b: make([]byte, 0, len(s)), open: open}
	var opens []int // where in c.b a "<" may still open a token
	for i := 0; i < len(s); i++ {
		c.b = append(c.b, s[i])
		switch s[i] {
		case '<':
			opens = append(opens, len(c.b)-1)
		case '>':
			if len(opens) == 0 {
				continue
			}
			at := opens[len(opens)-1]
			m := wholeTokenRE.FindSubmatchIndex(c.b[at:])
			var k kind
			ok := m != nil
			if ok {
				k, ok = classify(string(c.b[at+m[4] : at+m[5]]))
			}
			if !ok {
				// Every "<" so far now has this ">" after it: none of them
				// can open a token any more.
				opens = opens[:0]
				continue
			}
			t := token{kind: k, closing: m[3] > m[2], name: string(c.b[at+m[4] : at+m[5]])}
			if k != kindUnknown {
				t.name = strings.ToUpper(t.name)
			}
			opens = opens[:len(opens)-1]
			c.b = c.b[:at]
			end := i + 1
			if k == kindProactive && !t.closing {
				end, _, _ = readObject(s, end)
				if open && objectMayFollow(s, end) {
					end = len(s)
				}
			}
			end += c.cut(s[end:])
			if each != nil {
				each(t)
			}
			i = end - 1
		}
	}
	return c.text()
}

// wholeTokenRE is tokenRE for a whole candidate.
var wholeTokenRE = regexp.MustCompile(`^` + tokenRE.String() + `$`)

// cutter builds a text with spans cut out of it, without leaving the
// spaces around a span behind, and drops the lines a cut left blank.
type cutter struct {
	b    []byte
	cuts []int // where in b something was cut, ascending
	// open: the text goes on after its end (a streamed answer so far), so
	// a span at the end is not known to end its line.
	open bool
}

// cut records a cut at the end of b; rest is what follows the span cut.
// A span that ends its line takes the spaces before it; one that starts
// its line or has a space before it takes the spaces after it. It returns
// how many bytes of rest were taken.
func (c *cutter) cut(rest string) int {
	r := skipBlanks(rest, 0)
	after := rest[r:]
	switch {
	case after == "" && !c.open || after != "" && after[0] == '\n' || after == "\r" || strings.HasPrefix(after, "\r\n"):
		n := len(c.b)
		for n > 0 && isBlank(c.b[n-1]) {
			n--
		}
		c.b = c.b[:n]
		for k := len(c.cuts) - 1; k >= 0 && c.cuts[k] > n; k-- {
			c.cuts[k] = n
		}
	case len(c.b) == 0 || c.b[len(c.b)-1] == '\n' || isBlank(c.b[len(c.b)-1]):
	default:
		r = 0
	}
	c.cuts = append(c.cuts, len(c.b))
	return r
}

// text returns b without the lines a cut left blank. A blank line right
// after a dropped one goes too when the line kept before was blank, so a
// token between two paragraphs leaves one paragraph break, not two.
func (c *cutter) text() string {
	if len(c.cuts) == 0 {
		return string(c.b)
	}
	out := make([]byte, 0, len(c.b))
	ci := 0
	dropped, keptBlank := false, false
	for start := 0; start < len(c.b); {
		end, next := len(c.b), len(c.b) // end: the line's '\n' (or the end of b)
		if nl := bytes.IndexByte(c.b[start:], '\n'); nl >= 0 {
			end, next = start+nl, start+nl+1
		}
		touched := false
		for ci < len(c.cuts) && c.cuts[ci] <= end {
			touched = touched || c.cuts[ci] >= start
			ci++
		}
		blank := len(bytes.TrimSpace(c.b[start:end])) == 0
		if blank && (touched || dropped && keptBlank) {
			dropped = true
		} else {
			out = append(out, c.b[start:next]...)
			dropped, keptBlank = false, blank
		}
		start = next
	}
	return string(out)
}
