package promise

// item is a cue found in a sentence, over tokens [b, e).
type item struct {
	kind kind
	b, e int
}

// Windows, in words: how far a verb may stand from its head ("I'll be
// sure to remind you", "ich werde dich morgen früh daran erinnern"), and a
// time from the verb it belongs to.
const (
	headGap   = 7
	timeAfter = 6
	timeAhead = 5
	negBefore = 1 // "не переживай, напишу" is no negation of "напишу"
	negAfter  = 3
)

// find reads the sentence's words into cues, longest match first.
func find(low []byte, toks []span, items []item) []item {
	for i := 0; i < len(toks); {
		n, k := matchAt(low, toks, i)
		if n == 0 {
			i++
			continue
		}
		items = append(items, item{k, i, i + n})
		i += n
	}
	return items
}

// matchAt returns how many words the longest cue at toks[i] covers, and
// its kind; 0 when none starts there.
func matchAt(low []byte, toks []span, i int) (int, kind) {
	cues := index[string(low[toks[i].b:toks[i].e])]
next:
	for _, c := range cues {
		if i+len(c.words) > len(toks) {
			continue
		}
		for j := 1; j < len(c.words); j++ {
			t := toks[i+j]
			if string(low[t.b:t.e]) != c.words[j] {
				continue next
			}
		}
		n := len(c.words)
		if c.kind == kAt {
			// "at" is a time only before a number: "at 5 pm", "в 8".
			if i+n >= len(toks) || !isDigit(low[toks[i+n].b]) {
				continue
			}
			n++
			if i+n < len(toks) && units[string(low[toks[i+n].b:toks[i+n].e])] {
				n++
			}
			return n, kTime
		}
		return n, c.kind
	}
	return 0, 0
}

// judgeWords judges one sentence of the word languages.
func judgeWords(reply string, low []byte, s, e int, toks []span) Finding {
	toks = tokenize(low, s, e, toks)
	if len(toks) == 0 {
		return Finding{}
	}
	var buf [24]item
	items := find(low, toks, buf[:0])
	var best Finding
	for vi, v := range items {
		lvl, h, t := verbLevel(items, vi, v)
		if lvl <= best.Verdict {
			continue
		}
		best.Verdict = lvl
		start, end := toks[items[h].b].b, toks[v.e-1].e
		best.When = ""
		if t >= 0 {
			tb, te := toks[items[t].b].b, toks[items[t].e-1].e
			best.When = reply[tb:te]
			start, end = min(start, tb), max(end, te)
		}
		best.Phrase = reply[start:end]
	}
	if best.Verdict == Yes && (isQuestion(low[s:e]) || has(items, kCond)) {
		best.Verdict = Unsure
	}
	return best
}

// verbLevel says what the verb items[vi] makes of its sentence, with the
// index of its head (the verb itself for a form carrying its person) and
// of its time (-1 when none).
func verbLevel(items []item, vi int, v item) (Verdict, int, int) {
	lvl, needTime, h := Yes, false, vi
	switch v.kind {
	case kStrong, kWeak:
		h = headOf(items, vi)
		if h < 0 {
			return No, 0, -1
		}
		needTime = v.kind == kWeak
		if items[h].kind == kOffer {
			lvl = Unsure
		}
	case kSelfWeak:
		needTime = true
	case kSelfOffer:
		lvl = Unsure
	case kSelfStrong:
	default:
		return No, 0, -1
	}
	if negated(items, h, vi) {
		return No, 0, -1
	}
	if h == vi && offered(items, vi) {
		lvl = Unsure
	}
	t := timeOf(items, items[h].b, vi)
	if needTime && t < 0 {
		return No, 0, -1
	}
	return lvl, h, t
}

// headOf finds the head a verb hangs on: the nearest one before it, close
// enough and in the same clause; -1 when none.
func headOf(items []item, vi int) int {
	for j := vi - 1; j >= 0; j-- {
		it := items[j]
		if items[vi].b-it.e > headGap || it.kind == kBreak {
			return -1
		}
		if it.kind == kHead || it.kind == kOffer {
			return j
		}
	}
	return -1
}

// negated says whether a negation stands just before the promise, inside
// it, or (for "nicht", "pas") just after it.
// It looks only at the items near, so a long sentence stays linear.
func negated(items []item, h, vi int) bool {
	b, e := items[h].b, items[vi].e
	j := h
	for j > 0 && items[j-1].b >= b-negBefore {
		j--
	}
	for ; j < len(items) && items[j].b < e+negAfter; j++ {
		switch k := items[j].kind; {
		case k == kNeg && items[j].b < e, k == kPostNeg:
			return true
		}
	}
	return false
}

// offered says whether an offer ("want me to", "хочешь, я") just before a
// self-contained verb makes it an offer.
func offered(items []item, vi int) bool {
	for j := vi - 1; j >= 0 && items[vi].b-items[j].e <= 3; j-- {
		if items[j].kind == kOffer {
			return true
		}
	}
	return false
}

// timeOf finds the time a promise speaks of: a little before its head, or
// after its verb in the same clause; -1 when none.
func timeOf(items []item, hb int, vi int) int {
	for j := vi - 1; j >= 0 && hb-items[j].e <= timeAhead; j-- {
		if items[j].kind == kTime {
			return j
		}
	}
	for j := vi + 1; j < len(items) && items[j].b-items[vi].e <= timeAfter; j++ {
		switch items[j].kind {
		case kBreak:
			return -1
		case kTime:
			return j
		}
	}
	return -1
}

func has(items []item, k kind) bool {
	for _, it := range items {
		if it.kind == k {
			return true
		}
	}
	return false
}
