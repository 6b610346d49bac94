package partial

import (
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/util"
)

// Limits past which an open bracket or link destination is taken as
// text rather than held back: a "[" the model never closes must not hold
// the rest of its paragraph.
const (
	maxHeldLabel = 200
	maxHeldURL   = 2048
)

// rawMarkup are the characters that may be markup in running text.
const rawMarkup = "*_~`[]<>&\\!|#"

// delim is a run of emphasis markers ("*", "_", "~"), read as goldmark
// reads them (parser.ScanDelimiter) so that they pair as it pairs them.
type delim struct {
	pos, length, orig int
	char              byte
	canOpen, canClose bool
	removed           bool
}

// inlineScan reads the inline text of the last block, s[start:], for what
// is still open at its end.
type inlineScan struct {
	s string
	// finished reads s as a whole text: nothing at its end may grow.
	finished bool
	hold     int // the earliest place to hold back from; len(s) if none
	ds       []delim
	code     int // an open code span's backticks, -1 if none
	// trailing is where a run of markers ending the text starts, -1 if
	// none.
	trailing int
	codeN    int
	labels   []int // the "[" (or "![") not closed yet
}

// closeInline returns where to cut md, or what to append to it, so that
// nothing open in its last block, starting at start, shows as a marker.
func closeInline(md string, start int) (int, string) {
	sc := scanInline(md, start, false)
	if sc.hold < len(md) {
		if sc.hold == sc.trailing && closesAll(md, start, sc) {
			return len(md), ""
		}
		return sc.hold, ""
	}
	closers, first := sc.closers()
	if closers == "" || strings.Contains(md[start:], "|") {
		// In a table (the web chat's) a closer would be a cell of its
		// own: the span waits for its own closer.
		return first, ""
	}
	// The closers must pair as meant; where they would not, the text is
	// held back from the first span they were to close.
	check := scanInline(md+closers, start, true)
	check.pair()
	for k, d := range check.ds {
		// Each span meant to be closed is, and each closer closes.
		if d.length > 0 && (d.pos >= len(md) || k < len(sc.ds) && sc.ds[k].open()) {
			return first, ""
		}
	}
	return len(md), closers
}

// closesAll reports whether md, read as finished, closes with its last
// run of markers (sc's trailing one) every span sc left open, none of
// them turned into text: then it shows as it is (more markers after it
// would only show as text).
func closesAll(md string, start int, sc *inlineScan) bool {
	open := append([]delim(nil), sc.ds...)
	pair(open)
	check := scanInline(md, start, true)
	check.pair()
	last := len(check.ds) - 1
	if last < 0 || check.ds[last].pos != sc.trailing {
		return false
	}
	for k, d := range check.ds {
		if d.length > 0 && (k == last || k < len(open) && open[k].open()) || d.open() {
			return false
		}
	}
	return true
}

func scanInline(s string, start int, finished bool) *inlineScan {
	sc := &inlineScan{s: s, hold: len(s), code: -1, trailing: -1, finished: finished}
	i := start
	for i < len(s) {
		switch s[i] {
		case '\\':
			i = sc.escape(i)
		case '`':
			if i = sc.backticks(i); sc.code >= 0 {
				i = len(s) // the rest is code
			}
		case '<':
			i = sc.angle(i)
		case '&':
			sc.entity(i)
			i++
		case '!':
			if i+1 < len(s) && s[i+1] == '[' {
				sc.labels = append(sc.labels, i)
				i++
			}
			i++
		case '[':
			sc.labels = append(sc.labels, i)
			i++
		case ']':
			i = sc.closeLabel(i)
		case '*', '_', '~':
			i = sc.delimiter(i)
		default:
			i++
		}
	}
	for _, o := range sc.labels {
		if len(s)-o < maxHeldLabel && !strings.ContainsAny(s[o:], "\n") {
			sc.holdFrom(o) // maybe a link's text
			break
		}
	}
	return sc
}

func (sc *inlineScan) holdFrom(i int) {
	if !sc.finished {
		sc.hold = min(sc.hold, i)
	}
}

// escape reads a backslash: at the end it may still escape what comes.
func (sc *inlineScan) escape(i int) int {
	if i+1 == len(sc.s) {
		sc.holdFrom(i)
		return i + 1
	}
	if util.IsPunct(sc.s[i+1]) {
		return i + 2
	}
	return i + 1
}

// backticks reads a run of backticks: a code span when a run as long
// closes it, else a code span still open, closed at the end when what it
// holds so far is plain, held back otherwise.
func (sc *inlineScan) backticks(i int) int {
	s := sc.s
	n := runLen(s, i)
	for j := i + n; j < len(s); {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			break
		}
		m := runLen(s, j+k)
		if j+k+m == len(s) && !sc.finished && (m > n || strings.ContainsAny(s[i+n:j+k], rawMarkup)) {
			// The closing run may still grow and close nothing: what
			// the span holds then shows only if it is plain.
			sc.holdFrom(i)
			return len(s)
		}
		if m == n {
			return j + k + m
		}
		j += k + m
	}
	if sc.finished {
		return i + n // never closed: text
	}
	// Closing it is a guess: what it holds shows as written, so it must
	// hold no character the finished text might read as markup.
	rest := s[i+n:]
	if strings.TrimSpace(rest) == "" || strings.ContainsAny(rest, rawMarkup) {
		sc.holdFrom(i)
		return len(s)
	}
	sc.code, sc.codeN = i, n
	return len(s)
}

func runLen(s string, i int) int {
	j := i
	for j < len(s) && s[j] == s[i] {
		j++
	}
	return j - i
}

// angle reads a "<": an autolink is skipped whole (its markers are
// text); one not closed yet, with no space after it, may become an
// autolink or a tag.
func (sc *inlineScan) angle(i int) int {
	s := sc.s
	end := strings.IndexByte(s[i:], '>')
	if end < 0 {
		if len(s)-i < maxHeldLabel && !strings.ContainsAny(s[i:], " \t\n") {
			sc.holdFrom(i)
		}
		return i + 1
	}
	if inner := s[i+1 : i+end]; isAutolink(inner) {
		return i + end + 1
	}
	return i + 1
}

// isAutolink reports whether "<" inner ">" is a CommonMark autolink: a
// scheme (a letter, then 1 to 31 letters, digits, "+", ".", "-"), ":" and
// no space; or an email address.
func isAutolink(inner string) bool {
	if strings.ContainsAny(inner, " \t\n<") {
		return false
	}
	if scheme, _, ok := strings.Cut(inner, ":"); ok && len(scheme) >= 2 && len(scheme) <= 32 {
		valid := scheme[0] >= 'a' && scheme[0] <= 'z' || scheme[0] >= 'A' && scheme[0] <= 'Z'
		for k := 1; k < len(scheme) && valid; k++ {
			valid = isNameByte(scheme[k]) && scheme[k] != '_' || strings.IndexByte("+.-", scheme[k]) >= 0
		}
		if valid {
			return true
		}
	}
	local, domain, ok := strings.Cut(inner, "@")
	if !ok || local == "" || domain == "" {
		return false
	}
	for k := 0; k < len(local); k++ {
		if !isNameByte(local[k]) && strings.IndexByte(".!#$%&'*+/=?^`{|}~-", local[k]) < 0 {
			return false
		}
	}
	for k := 0; k < len(domain); k++ {
		if !isNameByte(domain[k]) && domain[k] != '.' && domain[k] != '-' || domain[k] == '_' {
			return false
		}
	}
	return true
}

// entity holds back an entity reference cut short at the end ("&am").
func (sc *inlineScan) entity(i int) {
	rest := sc.s[i+1:]
	if len(rest) > 32 {
		return
	}
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		if !(c == '#' || util.IsAlphaNumeric(c)) {
			return
		}
	}
	sc.holdFrom(i)
}

// closeLabel reads a "]": a link's text may go on with "(url)"; held
// back while that is not finished. (A "[ref]" after it is a label of its
// own: a reference link shows as written unless the text defines it.) The emphasis inside a
// link pairs on its own, as the parser pairs it.
func (sc *inlineScan) closeLabel(i int) int {
	s := sc.s
	if len(sc.labels) == 0 {
		return i + 1
	}
	o := sc.labels[len(sc.labels)-1]
	sc.labels = sc.labels[:len(sc.labels)-1]
	next := i + 1
	switch {
	case next == len(s):
		sc.holdFrom(o)
		return next
	case s[next] == '(':
		end := destinationEnd(s, next+1)
		if end == notLink {
			return next
		}
		if end < 0 {
			if len(s)-next < maxHeldURL {
				sc.holdFrom(o)
			}
			return len(s)
		}
		sc.pairWithin(o)
		sc.labels = sc.labels[:0] // no link inside a link
		return end + 1
	}
	return next
}

// destinationEnd finds the ")" ending a link destination (and title)
// that starts at i: -1 when the text ends first, notLink when what
// follows "(" cannot be a destination (the brackets are text).
func destinationEnd(s string, i int) int {
	j := skipLinkSpace(s, i)
	if j < len(s) && s[j] == '<' {
		k := strings.IndexAny(s[j+1:], ">\n")
		if k < 0 {
			return -1
		}
		if s[j+1+k] == '\n' {
			return notLink
		}
		j += k + 2
	} else {
		depth := 0
	dest:
		for ; j < len(s); j++ {
			switch s[j] {
			case '\\':
				j++
			case '(':
				depth++
			case ')':
				if depth == 0 {
					return j
				}
				depth--
			case ' ', '\t', '\n':
				break dest
			}
		}
	}
	return titleEnd(s, skipLinkSpace(s, j))
}

// notLink says a "](" starts no link.
const notLink = -2

// titleEnd finds the ")" after a link's optional title starting at j.
func titleEnd(s string, j int) int {
	if j >= len(s) {
		return -1
	}
	closing := byte(0)
	switch s[j] {
	case ')':
		return j
	case '"', '\'':
		closing = s[j]
	case '(':
		closing = ')'
	default:
		return notLink
	}
	for k := j + 1; k < len(s); k++ {
		switch s[k] {
		case '\\':
			k++
		case closing:
			e := skipLinkSpace(s, k+1)
			switch {
			case e >= len(s):
				return -1
			case s[e] == ')':
				return e
			}
			return notLink
		}
	}
	return -1
}

func skipLinkSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	return i
}

// pairWithin pairs the markers written after position o (a link's text)
// among themselves; none of them is open after the link.
func (sc *inlineScan) pairWithin(o int) {
	k := len(sc.ds)
	for k > 0 && sc.ds[k-1].pos > o {
		k--
	}
	pair(sc.ds[k:])
	sc.ds = sc.ds[:k]
}

// delimiter reads a run of emphasis markers with what may open or close,
// as goldmark reads it; a run ending the text may still grow.
func (sc *inlineScan) delimiter(i int) int {
	s := sc.s
	n := runLen(s, i)
	if i+n == len(s) && !sc.finished {
		sc.holdFrom(i)
		sc.trailing = i
		return len(s)
	}
	c := s[i]
	if c == '~' && n > 2 {
		return i + n // not strikethrough: text
	}
	before := ' '
	if i > 0 {
		before, _ = utf8.DecodeLastRuneInString(s[:i])
	}
	after := ' '
	if i+n < len(s) {
		after, _ = utf8.DecodeRuneInString(s[i+n:])
	}
	bPunct, bSpace := util.IsPunctRune(before), util.IsSpaceRune(before)
	aPunct, aSpace := util.IsPunctRune(after), util.IsSpaceRune(after)
	left := !aSpace && (!aPunct || bSpace || bPunct)
	right := !bSpace && (!bPunct || aSpace || aPunct)
	d := delim{pos: i, length: n, orig: n, char: c, canOpen: left, canClose: right}
	if c == '_' {
		d.canOpen = left && (!right || bPunct)
		d.canClose = right && (!left || aPunct)
	}
	sc.ds = append(sc.ds, d)
	return i + n
}

// pair matches openers with closers as goldmark does
// (parser.ProcessDelimiters): each closer takes the nearest opener of its
// character before it, two markers at a time when both have two, not at
// all where the rule of three forbids it; markers between a pair are
// text.
func pair(ds []delim) {
	for c := range ds {
		closer := &ds[c]
		for closer.canClose && !closer.removed {
			o, maybe := -1, false
			consume := 0
			for k := c - 1; k >= 0; k-- {
				op := &ds[k]
				if op.removed || !op.canOpen || op.char != closer.char {
					continue
				}
				maybe = true
				if consume = consumption(op, closer); consume > 0 {
					o = k
					break
				}
			}
			if o < 0 {
				if !maybe && !closer.canOpen {
					closer.removed = true
				}
				break
			}
			ds[o].length -= consume
			closer.length -= consume
			for k := o + 1; k < c; k++ {
				ds[k].removed = true
			}
			ds[o].removed = ds[o].length == 0
			closer.removed = closer.length == 0
		}
	}
}

// consumption is goldmark's Delimiter.CalcComsumption.
func consumption(opener, closer *delim) int {
	if (opener.canClose || closer.canOpen) && (opener.orig+closer.orig)%3 == 0 && closer.orig%3 != 0 {
		return 0
	}
	if opener.length >= 2 && closer.length >= 2 {
		return 2
	}
	return 1
}

func (sc *inlineScan) pair() { pair(sc.ds) }

// open reports whether d, once paired, is a span still open.
func (d delim) open() bool { return !d.removed && d.canOpen && d.length > 0 }

// closers pairs the markers and returns what closes the spans still
// open, innermost first (an open code span first of all), and where the
// first of them opens.
func (sc *inlineScan) closers() (string, int) {
	sc.pair()
	var b strings.Builder
	first := len(sc.s)
	if sc.code >= 0 {
		b.WriteString(strings.Repeat("`", sc.codeN))
		first = sc.code
	}
	multiline := false
	for k := len(sc.ds) - 1; k >= 0; k-- {
		d := sc.ds[k]
		if !d.open() {
			continue
		}
		b.WriteString(strings.Repeat(string(d.char), d.length))
		first = min(first, d.pos)
		multiline = multiline || strings.Contains(sc.s[d.pos:], "\n") || inURL(sc.s, d.pos) || inAngle(sc.s, d.pos)
	}
	if multiline {
		// Slack reads markers line by line: a span over a line end would
		// show them; in a bare URL, which platforms link whole, they
		// would show too; and after a "<" taking the marker out could make
		// "<*ABC>" read as a tag. It waits for its own closer.
		return "", first
	}
	return b.String(), first
}

// inURL reports whether s[i] is in a word that is a bare URL.
func inURL(s string, i int) bool {
	word := s[strings.LastIndexAny(s[:i], " \t\n")+1 : i]
	return strings.Contains(word, "://") || strings.Contains(strings.ToLower(word), "www.")
}

// inAngle reports whether s[i] is where a tag or token's name may be,
// after "<" ("<*ABC", "< /_ABC", "<AB*C").
func inAngle(s string, i int) bool {
	j := i - 1
	for j >= 0 && (isNameByte(s[j]) || s[j] == '*' || s[j] == '~') {
		j--
	}
	for j >= 0 && strings.IndexByte(" \t/*_~", s[j]) >= 0 {
		j--
	}
	return j >= 0 && s[j] == '<'
}

func isNameByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
