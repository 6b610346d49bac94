package markup

import (
	"strings"
	"unicode/utf8"
)

// fallback rewrites the stretch from at to the first place it may be cut
// as plain text in the flavor, cut at every space: the stretch is too long
// for a part and has no safe place in it (a huge span, link or word), so
// its formatting goes and its text stays. It returns where the rewritten
// stretch starts.
func (s *splitter) fallback(at pos) pos {
	j, end, next := s.stretch(at)
	var src strings.Builder
	for k := at.line; k <= j; k++ {
		l := s.lines[k]
		from, to := 0, len(l.text)
		if k == at.line {
			from = at.off
		}
		if k == j {
			to = end
		}
		if k > at.line {
			src.WriteByte('\n')
		}
		src.WriteString(l.text[from:to])
	}
	first := s.lines[at.line]
	out := s.plainLines(unrender(src.String(), s.r.f), first.quote, at.off == 0 && first.start)
	if last := s.lines[j]; end < len(last.text) {
		// The stretch ended at a cut inside line j: its rest follows on
		// the last new line, as it did.
		m := &out[len(out)-1]
		join := len(m.text)
		shift := join + next - end
		m.text += last.text[end:]
		if join > 0 {
			m.cuts = append(m.cuts, cut{end: join, next: shift})
		}
		for _, c := range last.cuts {
			if c.end >= next {
				m.cuts = append(m.cuts, cut{end: c.end - next + shift, next: c.next - next + shift})
			}
		}
		m.open = last.open
	}
	s.keepSpans(out)
	return s.replace(at, j, out)
}

// replace puts out in the place of the lines from at to line j, and
// returns where out starts. The start of line at.line before at.off,
// already in a part, is dropped.
func (s *splitter) replace(at pos, j int, out []line) pos {
	rest := s.lines[j+1:]
	s.lines = append(append(s.lines[:at.line:at.line], out...), rest...)
	return pos{at.line, 0}
}

// stretch finds the first place after at (non-code) where a part could
// end, with text before it: the line, the offset in it, and where the next
// part would start in that line (next == end == the line's length at its
// end).
func (s *splitter) stretch(at pos) (int, int, int) {
	content := false
	for j := at.line; j < len(s.lines); j++ {
		l := s.lines[j]
		from := 0
		if j == at.line {
			from = at.off
		}
		for _, c := range l.cutsAfter(from) {
			if content || strings.TrimSpace(l.text[from:c.end]) != "" {
				return j, c.end, c.next
			}
		}
		content = content || strings.TrimSpace(l.text[from:]) != ""
		if j == len(s.lines)-1 {
			break
		}
		if kind, _ := s.boundary(j); kind != noCut && content {
			return j, len(l.text), len(l.text)
		}
	}
	last := len(s.lines) - 1
	return last, len(s.lines[last].text), len(s.lines[last].text)
}

// codeFallback rewrites the rest of the code block at at as plain text,
// and returns where that starts.
func (s *splitter) codeFallback(at pos) pos {
	j := at.line
	for j < len(s.lines)-1 && s.lines[j].code != codeClose && s.lines[j+1].code != notCode && s.lines[j+1].code != codeOpen {
		j++
	}
	var code strings.Builder
	for k := at.line; k <= j; k++ {
		l := s.lines[k]
		if l.code != codeBody {
			continue
		}
		from := 0
		if k == at.line {
			from = at.off
		}
		if code.Len() > 0 {
			code.WriteByte('\n')
		}
		code.WriteString(unescapeCode(s.r.f, l.text[from:]))
	}
	first := s.lines[at.line]
	out := s.plainLines([]seg{{kind: segText, text: code.String()}}, first.quote, at.off == 0 && first.start)
	s.keepSpans(out)
	return s.replace(at, j, out)
}

// plainLines writes segs as lines of text in the flavor with nothing to
// keep whole but links and code spans, every space a cut; an atom longer
// than a part is shown as text, and a word longer than a part cut up.
func (s *splitter) plainLines(segs []seg, quote, start bool) []line {
	budget := s.limit
	if quote {
		budget -= s.qp
	}
	var out []line
	var cur lineBuilder
	var word strings.Builder
	flushWord := func() {
		if word.Len() > 0 {
			s.addWord(&cur, word.String(), budget)
			word.Reset()
		}
	}
	endLine := func() {
		flushWord()
		out = append(out, cur.line(quote, start && len(out) == 0))
		cur = lineBuilder{}
	}
	for _, sg := range segs {
		if sg.kind != segText {
			if a, ok := s.atom(sg); ok && measure(s.r.f, a) <= cur.room(s.r.f, budget) {
				flushWord()
				cur.glue()
				if strings.HasSuffix(cur.b.String(), "`") && strings.HasPrefix(a, "`") {
					// Two code spans that markup kept apart (an emphasis
					// marker between them, now gone) would run their
					// fences together into one longer fence.
					cur.b.WriteString(zwsp)
				}
				cur.b.WriteString(a)
				continue
			}
		}
		t := sg.text
		if sg.kind == segLink && t == "" {
			t = sg.url
		}
		for i := 0; i < len(t); i++ {
			switch c := t[i]; c {
			case '\n':
				endLine()
			case ' ', '\t':
				flushWord()
				j := i
				for j < len(t) && (t[j] == ' ' || t[j] == '\t') {
					j++
				}
				n := j - i
				if cur.b.Len() == 0 {
					// Indentation is no place for a cut: so much of it
					// that the first word would not fit is left out.
					n = min(n, budget/4)
				}
				cur.cut(n)
				cur.b.WriteString(t[i : i+n])
				i = j - 1
			default:
				word.WriteByte(c)
			}
		}
	}
	endLine()
	return out
}

// lineBuilder builds a line of plainLines.
type lineBuilder struct {
	b    strings.Builder
	cuts []cut
}

// cut marks a cut here, dropping the next n bytes.
func (lb *lineBuilder) cut(n int) {
	lb.cuts = append(lb.cuts, cut{end: lb.b.Len(), next: lb.b.Len() + n})
}

// glue marks a cut here if a word or atom ends here: one put right after
// it may then start a part.
func (lb *lineBuilder) glue() {
	if t := lb.b.String(); t != "" && t[len(t)-1] != ' ' && t[len(t)-1] != '\t' {
		lb.cut(0)
	}
}

// room is what is left of budget for what comes next on the line: all of
// it after a word or a cut, less the indentation at the start of a line,
// which has no cut after it.
func (lb *lineBuilder) room(f flavor, budget int) int {
	if t := lb.b.String(); strings.TrimLeft(t, " \t") == "" {
		return budget - measure(f, t)
	}
	return budget
}

// line is the line built, without white space at its end (which shows
// nothing and could keep it from fitting); a cut must leave text on both
// sides.
func (lb *lineBuilder) line(quote, start bool) line {
	l := line{quote: quote, start: start, text: strings.TrimRight(lb.b.String(), " \t")}
	for _, c := range lb.cuts {
		if c.end > 0 && c.next < len(l.text) {
			l.cuts = append(l.cuts, c)
		}
	}
	return l
}

// keepSpans drops, on Slack, the cuts of lines that would cut what Slack
// reads as one span (markers in the text that pair up).
func (s *splitter) keepSpans(lines []line) {
	if s.r.f != slack {
		return
	}
	for k := range lines {
		_, lines[k].cuts = outside(slackSpans(lines[k].text), nil, lines[k].cuts)
	}
}

// atom is sg written in the flavor, to be kept whole: a link or code span.
func (s *splitter) atom(sg seg) (string, bool) {
	switch sg.kind {
	case segCode, segPre:
		if strings.TrimSpace(sg.text) == "" || strings.Contains(sg.text, "\n") {
			return "", false
		}
		return s.r.codeSpan(sg.text), true
	case segLink:
		if sg.url == "" || sg.text == "" {
			return "", false
		}
		switch s.r.f {
		case telegram:
			return "[" + escapeTelegram(sg.text) + "](" + escapeTelegramURL(sg.url) + ")", true
		case discord:
			return "[" + escapeDiscord(sg.text, false) + "](" + encodeURL(sg.url, "()<> \\") + ")", true
		case slack:
			u := escapeSlack(encodeURL(sg.url, "|<> "))
			if sg.text == sg.url {
				return "<" + u + ">", true
			}
			return "<" + u + "|" + escapeSlack(sg.text) + ">", true
		}
	}
	return "", false
}

// addWord writes a visible word on lb, escaped, cut into pieces that
// each fit in budget if it does not.
func (s *splitter) addWord(lb *lineBuilder, w string, budget int) {
	lb.glue()
	room := lb.room(s.r.f, budget)
	if esc := s.escapeWord(w); measure(s.r.f, esc) <= room {
		lb.b.WriteString(esc)
		return
	}
	for w != "" {
		n := s.piece(w, room)
		lb.glue()
		lb.b.WriteString(s.escapeWord(w[:n]))
		w = w[n:]
		room = budget
	}
}

// piece is the length of the longest start of w, cut where a user sees no
// cut if it can be, whose escaped form fits in budget (at least a rune).
// Escaping never shortens text, so no more than budget runes are tried,
// and the longest is found by bisection.
func (s *splitter) piece(w string, budget int) int {
	var stops []int
	for i := 0; i < len(w) && len(stops) < budget; {
		_, n := utf8.DecodeRuneInString(w[i:])
		i += n
		stops = append(stops, i)
	}
	fits := func(k int) bool { return measure(s.r.f, s.escapeWord(w[:stops[k]])) <= budget }
	lo, hi := -1, len(stops)-1 // stops[lo] fits, stops[hi+1] does not
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo < 0 {
		return stops[0]
	}
	return graphemeStop(w, 0, stops[:lo+1])
}

// escapeWord writes a word as literal text. Discord's line-start markup
// is escaped wherever a word starts, since a cut may put it at the start
// of a line.
func (s *splitter) escapeWord(w string) string {
	switch s.r.f {
	case discord:
		return escapeDiscord(w, true)
	case slack:
		return slackLiteral(w)
	}
	return s.r.escape(w, true)
}

// slackLiteral writes a word for Slack so that it shows as written.
// mrkdwn has no escapes: a backtick, or a marker that could open or close
// a span, is written as code of itself, which shows the character and
// pairs with nothing.
func slackLiteral(w string) string {
	if !strings.ContainsAny(w, "`*_~") {
		return escapeSlack(w)
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		if strings.IndexByte("`*_~", c) < 0 {
			continue
		}
		prev, _ := utf8.DecodeLastRuneInString(w[:i])
		next, _ := utf8.DecodeRuneInString(w[i+1:])
		opens := i+1 < len(w) && (i == 0 || !isWordRune(prev))
		closes := i > 0 && (i+1 == len(w) || !isWordRune(next))
		if c != '`' && !opens && !closes {
			continue // snake_case: inside a word, a marker is text
		}
		b.WriteString(escapeSlack(w[last:i]))
		if c == '`' {
			b.WriteString("```" + zwsp + "`" + zwsp + "```")
		} else {
			b.WriteString("`" + string(c) + "`")
		}
		last = i + 1
	}
	b.WriteString(escapeSlack(w[last:]))
	return b.String()
}
