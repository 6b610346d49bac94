package markup

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Part is one platform message of a Markdown text rendered and split to a
// platform's limit.
type Part struct {
	// Text is the part in the platform's markup. Every part renders on its
	// own: no span, link or escape is cut, and a code block cut across
	// parts is closed at the end of one and reopened (with its language)
	// at the start of the next.
	Text string
	// Plain is the same part's visible text with no markup, for when the
	// platform refuses Text as malformed: the adapter sends it instead, as
	// plain text (no parse mode; Discord escapes it first). It is never
	// longer than the limit.
	Plain string
}

// MinLimit is the smallest limit the Split functions keep to: a smaller
// positive limit is taken as MinLimit (no platform's is that small, and a
// code fence with its language must fit in a part). A limit of 0 or less
// means no limit: one part.
const MinLimit = 64

// SplitTelegram renders md as Telegram MarkdownV2 (TelegramV2) in parts of
// at most limit UTF-16 code units each.
func SplitTelegram(md string, limit int) []Part { return split(md, telegram, limit) }

// SplitDiscord renders md as Discord markdown (Discord) in parts of at most
// limit runes each.
func SplitDiscord(md string, limit int) []Part { return split(md, discord, limit) }

// SplitSlack renders md as Slack mrkdwn (Slack) in parts of at most limit
// runes each.
func SplitSlack(md string, limit int) []Part { return split(md, slack, limit) }

// SplitPlain renders md as plain text (Plain) in parts of at most limit
// runes each.
func SplitPlain(md string, limit int) []Part { return split(md, plain, limit) }

// split renders md in flavor f and cuts the rendering into parts.
//
// The renderer annotates its lines with where a cut is safe: not after a
// line whose span goes on, not right inside a code fence, between words
// only outside every span. Parts are packed greedily and cut at the last
// safe place that fits, preferring the start of a block, then a line end,
// then a space. A code block is closed at the end of a part and reopened
// at the start of the next. A stretch with no safe place within the
// limit (one giant span, one huge word) is shown as plain text for that
// stretch only (fallback), which can be cut at any space.
func split(md string, f flavor, limit int) []Part {
	parts, _ := splitParts(md, f, limit)
	return parts
}

// splitParts is split, also saying whether it had to go to its emergency
// exit (a bug: tests check that it never does).
func splitParts(md string, f flavor, limit int) ([]Part, bool) {
	r, lines := renderLines(md, f, true)
	if r == nil {
		return nil, false
	}
	whole := r.assemble(lines)
	if strings.TrimSpace(whole) == "" {
		return nil, false
	}
	if limit <= 0 || measure(f, whole) <= limit {
		return []Part{r.part(whole, limit)}, false
	}
	limit = max(limit, MinLimit)
	s := &splitter{r: r, limit: limit, lines: lines, qp: measure(f, r.quotePrefix())}
	return s.run(), s.stuck
}

// part makes a Part of text, whose Plain fits in limit.
func (r *renderer) part(text string, limit int) Part {
	if r.f == plain {
		return Part{Text: text, Plain: text}
	}
	segs := unrender(text, r.f)
	p := plainOf(segs, "> ")
	if limit > 0 && measure(r.f, p) > limit {
		// "> " is one longer than Telegram's ">": a part full of quote
		// lines keeps the marker as it was.
		p = plainOf(segs, ">")
	}
	return Part{Text: text, Plain: p}
}

// codePos is where a line is in a code block.
type codePos uint8

const (
	notCode codePos = iota
	codeOpen
	codeBody
	codeClose
)

// cut is a place in a line's text where a part may end (at end) and the
// next begin (at next); the bytes between, spaces, are dropped.
type cut struct{ end, next int }

// annotated cuts s into lines, marking as open every line whose line end
// is not one of breaks, and giving each line the cuts in it that are safe.
func (r *renderer) annotated(s string, breaks []int, cuts []cut) []line {
	if r.f == slack {
		breaks, cuts = outside(slackSpans(s), breaks, cuts)
	}
	out := make([]line, 0, strings.Count(s, "\n")+1)
	for start := 0; start <= len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		l := line{text: s[start:end]}
		for len(breaks) > 0 && breaks[0] < end {
			breaks = breaks[1:]
		}
		l.open = end < len(s) && (len(breaks) == 0 || breaks[0] != end)
		first := len(cuts)
		for i, c := range cuts {
			if c.end >= start {
				first = i
				break
			}
		}
		cuts = cuts[first:]
		n := 0
		for n < len(cuts) && cuts[n].next <= end {
			n++
		}
		var mine []cut
		for _, c := range cuts[:n] {
			c.end -= start
			c.next -= start
			if c.end > 0 && c.next < len(l.text) && r.cutsBefore(l.text[c.next:]) {
				mine = append(mine, c)
			}
		}
		l.cuts = mine
		cuts = cuts[n:]
		out = append(out, l)
		start = end + 1
	}
	return out
}

// outside keeps the breaks and cuts that are not inside one of spans (in
// order, like breaks and cuts).
func outside(spans [][2]int, breaks []int, cuts []cut) ([]int, []cut) {
	if len(spans) == 0 {
		return breaks, cuts
	}
	inside := func(from, to int) bool {
		for len(spans) > 0 && spans[0][1] <= from {
			spans = spans[1:]
		}
		return len(spans) > 0 && spans[0][0] < to
	}
	all := spans
	var keptBreaks []int
	for _, b := range breaks {
		if !inside(b, b+1) {
			keptBreaks = append(keptBreaks, b)
		}
	}
	spans = all
	var keptCuts []cut
	for _, c := range cuts {
		if !inside(c.end, c.next) {
			keptCuts = append(keptCuts, c)
		}
	}
	return keptBreaks, keptCuts
}

// cutsBefore reports whether a line may start with rest. Discord reads
// block markup ("> ", "# ", "- ", "1. ") at the start of any line and
// escapes it only there, so a cut may not put it at the start of a part.
func (r *renderer) cutsBefore(rest string) bool {
	if r.f != discord {
		return true
	}
	switch c := rest[0]; {
	case strings.IndexByte(">#-+*", c) >= 0:
		return false
	case c >= '0' && c <= '9':
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		return i == len(rest) || (rest[i] != '.' && rest[i] != ')')
	}
	return true
}

// measure is the length of s as the platform counts it: UTF-16 code units
// for Telegram, runes elsewhere.
func measure(f flavor, s string) int {
	if f != telegram {
		return utf8.RuneCountInString(s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x80 || c >= 0xC0 && c < 0xF0:
			n++ // a rune in the BMP: one unit
		case c >= 0xF0:
			n += 2 // a surrogate pair
		}
	}
	return n
}

// measureUpTo is measure(f, s) if it is at most most, else some number
// over most: it reads no further than it must, for huge lines.
func measureUpTo(f flavor, s string, most int) int {
	if len(s) <= most || most < 0 {
		return measure(f, s) // no more runes than bytes
	}
	n := 0
	for i := 0; i < len(s) && n <= most; {
		j := min(len(s), i+most-n+1)
		for j < len(s) && !utf8.RuneStart(s[j]) {
			j++
		}
		n += measure(f, s[i:j])
		i = j
	}
	return n
}

// cut kinds, best last.
const (
	noCut = iota
	wordCut
	lineCut
	blockCut
	nKinds
)

// splitter packs annotated lines into parts.
type splitter struct {
	r     *renderer
	limit int
	lines []line
	qp    int // the quote prefix's length
	parts []Part
	// stuck says the splitter went to its emergency exit.
	stuck bool
}

// cutsAfter are l's cuts that end after offset from.
func (l *line) cutsAfter(from int) []cut {
	if from == 0 {
		return l.cuts
	}
	i := sort.Search(len(l.cuts), func(i int) bool { return l.cuts[i].end > from })
	return l.cuts[i:]
}

// pos is a place in the lines: a line and a byte offset in its text.
type pos struct{ line, off int }

// candidate is a place where the part being packed may end.
type candidate struct {
	last int // the part's last line
	end  int // where in that line's text it ends
	// code says the part ends inside a code block, to be closed.
	code bool
	next pos
}

func (s *splitter) run() []Part {
	at := pos{}
	same := 0
	for {
		for at.off == 0 && at.line < len(s.lines) && skippable(s.lines[at.line]) {
			at.line++
		}
		if at.line >= len(s.lines) {
			return s.parts
		}
		next := s.pack(at)
		if next == at {
			// The lines were rewritten (fallback); a second time in the
			// same place would be a bug: the rest goes as cut plain text
			// rather than never ending.
			if same++; same > 1 {
				s.stuck = true
				s.emergency(at)
				return s.parts
			}
		} else {
			same = 0
		}
		at = next
	}
}

// skippable reports whether l, blank, can be left out at the start of a
// part (a blank line of fenced code cannot: it is code).
func skippable(l line) bool {
	return strings.TrimSpace(l.text) == "" && (l.code == notCode || l.fence == "")
}

// gap reports whether l is a blank line between blocks.
func gap(l line) bool { return l.code == notCode && strings.TrimSpace(l.text) == "" }

// reopens reports whether a part starting at line i starts inside a code
// block, to be reopened.
func (s *splitter) reopens(i int) bool {
	l := s.lines[i]
	return l.code == codeBody && l.fence != ""
}

// lineLen is the length of text on a line, with the quote prefix if quoted.
func (s *splitter) lineLen(quote bool, text string) int {
	return s.prefixLen(quote, text) + measure(s.r.f, text)
}

// prefixLen is the length of the quote prefix of a line of text: none if
// not quoted, ">" alone if the line is empty.
func (s *splitter) prefixLen(quote bool, text string) int {
	switch {
	case !quote:
		return 0
	case text == "":
		return 1
	}
	return s.qp
}

// pack packs one part starting at at, emits it and returns where the next
// starts. When nothing fits it rewrites the lines (fallback) or cuts a
// code line, and returns where it stands.
func (s *splitter) pack(at pos) pos {
	// best holds, for each kind of cut, the last that fits.
	var best [nKinds]candidate
	var found [nKinds]bool
	size := 0
	if s.reopens(at.line) {
		l := s.lines[at.line]
		size = s.lineLen(l.quote, l.fence) + 1
	}
	content := false
	for j := at.line; j < len(s.lines); j++ {
		l := &s.lines[j]
		from := 0
		if j == at.line {
			from = at.off
		} else {
			size++ // the line end
		}
		size += s.prefixLen(l.quote, l.text)
		visible := l.code != codeOpen && l.code != codeClose
		lead := from
		for lead < len(l.text) && l.text[lead] == ' ' {
			lead++
		}
		p := from
		for _, c := range l.cutsAfter(from) {
			size += measure(s.r.f, l.text[p:c.end])
			p = c.end
			if size > s.limit {
				break
			}
			if content || visible && c.end > lead {
				best[wordCut], found[wordCut] = candidate{last: j, end: c.end, next: pos{j, c.next}}, true
			}
		}
		if size <= s.limit {
			size += measureUpTo(s.r.f, l.text[p:], s.limit-size)
		}
		if size > s.limit {
			break
		}
		content = content || visible && lead < len(l.text)
		if j == len(s.lines)-1 {
			s.emit(at, candidate{last: j, end: len(l.text), next: pos{j + 1, 0}})
			return pos{len(s.lines), 0}
		}
		kind, code := s.boundary(j)
		extra := 0
		if code {
			extra = 1 + s.lineLen(l.quote, l.unfence)
		}
		if kind != noCut && content && size+extra <= s.limit {
			best[kind], found[kind] = candidate{last: j, end: len(l.text), code: code, next: pos{j + 1, 0}}, true
		}
	}
	for k := nKinds - 1; k > noCut; k-- {
		if found[k] {
			s.emit(at, best[k])
			return best[k].next
		}
	}
	return s.overflow(at)
}

// boundary is the kind of cut possible after line j, and whether it is
// inside a code block (to be closed and reopened).
func (s *splitter) boundary(j int) (int, bool) {
	cur, next := &s.lines[j], &s.lines[j+1]
	switch {
	case cur.open || gap(*cur) || cur.code == codeOpen || next.code == codeClose:
		return noCut, false
	case cur.code == codeBody && next.code == codeBody:
		return lineCut, cur.fence != ""
	case gap(*next) || next.start:
		return blockCut, false
	}
	return lineCut, false
}

// emit adds the part from at to c.
func (s *splitter) emit(at pos, c candidate) {
	var b strings.Builder
	qp := s.r.quotePrefix()
	first := true
	write := func(quote bool, text string) {
		if !first {
			b.WriteByte('\n')
		}
		first = false
		if quote {
			if text == "" {
				b.WriteString(strings.TrimRight(qp, " "))
			} else {
				b.WriteString(qp)
			}
		}
		b.WriteString(text)
	}
	if s.reopens(at.line) {
		l := s.lines[at.line]
		write(l.quote, l.fence)
	}
	for j := at.line; j <= c.last; j++ {
		l := s.lines[j]
		from, to := 0, len(l.text)
		if j == at.line {
			from = at.off
		}
		if j == c.last {
			to = c.end
		}
		write(l.quote, l.text[from:to])
	}
	if c.code {
		l := s.lines[c.last]
		write(l.quote, l.unfence)
	}
	s.parts = append(s.parts, s.r.part(b.String(), s.limit))
}

// overflow handles a part whose first unit does not fit: a code line is
// cut inside, anything else becomes plain text (fallback) that can be.
func (s *splitter) overflow(at pos) pos {
	l := s.lines[at.line]
	if l.code == notCode {
		return s.fallback(at)
	}
	// Lines of code are taken while they fit with the fences; the first
	// that does not is cut inside.
	used, b := 0, at.line
	switch {
	case l.code == codeOpen:
		used, b = s.lineLen(l.quote, l.text)+1, b+1
	case s.reopens(at.line):
		used = s.lineLen(l.quote, l.fence) + 1
	}
	content := false
	for ; b < len(s.lines) && s.lines[b].code == codeBody; b++ {
		body := s.lines[b]
		from := 0
		if b == at.line {
			from = at.off
		}
		if b > at.line && s.lines[b-1].code == codeBody {
			used++ // the line end
		}
		closing := 0
		if body.unfence != "" {
			closing = 1 + s.lineLen(body.quote, body.unfence)
		}
		q := s.prefixLen(body.quote, body.text[from:])
		n := q + measureUpTo(s.r.f, body.text[from:], s.limit-used-closing-q)
		if used+n+closing <= s.limit {
			used += n
			content = content || strings.TrimSpace(body.text[from:]) != ""
			continue
		}
		budget := s.limit - used - closing - q
		end := s.codeCut(body.text, from, budget)
		if end > from && (content || strings.TrimSpace(body.text[from:end]) != "") {
			s.emit(at, candidate{last: b, end: end, code: body.fence != "", next: pos{b, end}})
			return pos{b, end}
		}
		break
	}
	// The fences alone fill a part: the code goes as text.
	return s.codeFallback(at)
}

// codeCut is the furthest place after from in a code line where
// text[from:] may be cut so that the piece fits in budget: never inside an
// escape or a rune, nor, if it can help it, a grapheme. It is from if
// there is none.
func (s *splitter) codeCut(text string, from, budget int) int {
	var stops []int
	size := 0
	for i := from; i < len(text); {
		n := tokenLen(s.r.f, text[i:])
		size += measure(s.r.f, text[i:i+n])
		if size > budget {
			break
		}
		i += n
		if s.r.f == discord && i < len(text) && text[i] == '>' {
			// Discord reads a line starting with ">" as a quote before
			// it reads code: no code line may start with one.
			continue
		}
		stops = append(stops, i)
	}
	return graphemeStop(text, from, stops)
}

// graphemeStop is the last of stops (places in s after from, in order)
// that cuts no grapheme, looking back a few; the last stop if none does,
// from if there are none.
func graphemeStop(s string, from int, stops []int) int {
	if len(stops) == 0 {
		return from
	}
	for k := len(stops) - 1; k >= 0 && k >= len(stops)-8; k-- {
		if graphemeBreak(s, stops[k]) {
			return stops[k]
		}
	}
	return stops[len(stops)-1]
}

// tokenLen is the length of the unit at the start of s (not empty) in
// code: an escape or entity, which a cut may not split, or a rune.
func tokenLen(f flavor, s string) int {
	switch {
	case f == telegram && s[0] == '\\' && len(s) > 1:
		return 2 // code escapes only ` and \ (ASCII)
	case f == slack && s[0] == '&':
		for _, e := range [...]string{"&amp;", "&lt;", "&gt;"} {
			if strings.HasPrefix(s, e) {
				return len(e)
			}
		}
	}
	_, n := utf8.DecodeRuneInString(s)
	return n
}

// graphemeBreak reports whether cutting s at i leaves what a user sees as
// one character whole, as far as cheaply known: not before a joiner,
// variation selector, combining mark or skin tone, not after a joiner,
// not between two flag letters.
func graphemeBreak(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(s[:i])
	next, _ := utf8.DecodeRuneInString(s[i:])
	switch {
	case prev == '\u200d' || next == '\u200d',
		next >= 0xFE00 && next <= 0xFE0F, next >= 0xE0000 && next <= 0xE01EF,
		next >= 0x1F3FB && next <= 0x1F3FF,
		unicode.Is(unicode.M, next),
		isRegional(prev) && isRegional(next):
		return false
	}
	return true
}

func isRegional(r rune) bool { return r >= 0x1F1E6 && r <= 0x1F1FF }

// emergency emits the rest from at as plain text cut to the limit. It is
// never reached: it stands between a bug and a loop without end.
func (s *splitter) emergency(at pos) {
	var src strings.Builder
	for k := at.line; k < len(s.lines); k++ {
		from := 0
		if k == at.line {
			from = at.off
		}
		src.WriteString(s.lines[k].text[from:])
		src.WriteByte('\n')
	}
	rest := plainOf(unrender(src.String(), s.r.f), "")
	for rest != "" {
		n := s.piece(rest, s.limit)
		if t := s.escapeWord(rest[:n]); strings.TrimSpace(t) != "" {
			s.parts = append(s.parts, s.r.part(t, s.limit))
		}
		rest = rest[n:]
	}
}
