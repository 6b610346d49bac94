package promise

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// judgeZh judges one sentence low[s:e] for Chinese promises.
func judgeZh(reply string, low []byte, s, e int) Finding {
	sent := low[s:e]
	soft := containsAny(sent, zhCond) || isQuestion(sent) || bytes.HasSuffix(bytes.TrimSpace(sent), []byte("吗"))
	var best Finding
	for i, verbs := range [2][]string{zhStrong, zhWeak} {
		strong := i == 0
		for _, v := range verbs {
			for from := 0; ; {
				j := bytes.Index(sent[from:], []byte(v))
				if j < 0 {
					break
				}
				p := from + j
				from = p + len(v)
				f := zhVerb(reply, sent, s, p, p+len(v), strong, soft)
				if f.Verdict > best.Verdict {
					best = f
				}
			}
		}
	}
	return best
}

// zhWindow bounds, in bytes, how far before a verb its clause and time are
// looked for, so that a long sentence stays linear.
const zhWindow = 120

// zhVerb judges the verb at sent[vb:ve]; s is the sentence's offset in
// the reply; soft says the sentence asks or sets a condition.
func zhVerb(reply string, sent []byte, s, vb, ve int, strong, soft bool) Finding {
	for _, a := range zhAfter {
		if bytes.HasPrefix(sent[ve:], []byte(a)) {
			return Finding{}
		}
	}
	cb := clauseStart(sent, vb)
	clause := sent[cb:vb]
	// "提醒你一下，…" opening a clause reminds now.
	if len(bytes.TrimSpace(clause)) == 0 && bytes.HasPrefix(sent[ve:], []byte("一下")) {
		return Finding{}
	}
	if (containsAny(clause, zhNeg) && !containsAny(clause, zhAsk)) || containsAny(clause, zhPast) {
		return Finding{}
	}
	wb := max(0, vb-zhWindow)
	for wb > 0 && sent[wb]&0xC0 == 0x80 {
		wb--
	}
	tb, te := zhTime(sent[wb:vb], wb)
	if tb < 0 {
		tb, te = zhTime(sent[ve:clauseEnd(sent, ve)], ve)
	}
	future := containsAny(clause, zhFuture)
	if tb < 0 && (!strong || !future) {
		return Finding{}
	}
	f := Finding{Verdict: Yes}
	pb, pe := cb, ve
	if tb >= 0 {
		f.When = reply[s+tb : s+te]
		pb, pe = min(pb, tb), max(pe, te)
	}
	for pb < pe && (sent[pb] == ' ' || sent[pb] == '\n') {
		pb++
	}
	f.Phrase = reply[s+pb : s+pe]
	if soft || containsAny(clause, zhOffer) {
		f.Verdict = Unsure
	}
	return f
}

// zhTime finds the first time words in b (at offset off in the sentence),
// with the number before "点", "小时后", "分钟后"; -1 when none.
func zhTime(b []byte, off int) (int, int) {
	for _, t := range zhTimes {
		if j := bytes.Index(b, []byte(t)); j >= 0 {
			if tb := j; t == "小时后" || t == "分钟后" {
				tb = numberBefore(b, j)
				if tb == j {
					continue
				}
				return off + tb, off + j + len(t)
			}
			return off + j, off + j + len(t) + clockAt(b[j+len(t):])
		}
	}
	// An event done, then: "看完医生后" (after seeing the doctor).
	if j := bytes.Index(b, []byte("后")); j > 0 {
		if k := bytes.LastIndex(b[max(0, j-15):j], []byte("完")); k >= 0 {
			k += max(0, j-15)
			_, n := utf8.DecodeLastRune(b[:k]) // the verb before 完
			return off + k - n, off + j + len("后")
		}
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("点"))
		if j < 0 {
			return -1, -1
		}
		j += i
		if nb := numberBefore(b, j); nb < j && string(b[nb:j]) != "一" {
			return off + nb, off + j + len("点")
		}
		i = j + len("点")
	}
}

// clockAt returns the length of a clock time ("8点", "八点半") that b
// starts with, 0 when none.
func clockAt(b []byte) int {
	n := 0
	for n < len(b) {
		k := n + 1
		for k < len(b) && b[k]&0xC0 == 0x80 {
			k++
		}
		if !strings.Contains(zhNumerals, string(b[n:k])) {
			break
		}
		n = k
	}
	if n > 0 && bytes.HasPrefix(b[n:], []byte("点")) {
		n += len("点")
		if bytes.HasPrefix(b[n:], []byte("半")) {
			n += len("半")
		}
		return n
	}
	return 0
}

// numberBefore returns where the digits or numerals ending at j start.
func numberBefore(b []byte, j int) int {
	for j > 0 {
		k := j - 1
		for k > 0 && b[k]&0xC0 == 0x80 {
			k--
		}
		if !strings.Contains(zhNumerals, string(b[k:j])) {
			return j
		}
		j = k
	}
	return j
}

// clauseStart returns where the clause holding p starts, looking back
// at most zhWindow bytes.
func clauseStart(b []byte, p int) int {
	start := max(0, p-zhWindow)
	for start > 0 && b[start]&0xC0 == 0x80 {
		start++
	}
	from := start
	for _, c := range zhClauses {
		if j := bytes.LastIndex(b[from:p], []byte(c)); j >= 0 && from+j+len(c) > start {
			start = from + j + len(c)
		}
	}
	return start
}

// clauseEnd returns where the clause holding p ends, looking on at most
// zhWindow bytes.
func clauseEnd(b []byte, p int) int {
	end := min(len(b), p+zhWindow)
	for end < len(b) && b[end]&0xC0 == 0x80 {
		end++
	}
	for _, c := range zhClauses {
		if j := bytes.Index(b[p:end], []byte(c)); j >= 0 {
			end = p + j
		}
	}
	return end
}

func containsAny(b []byte, subs []string) bool {
	for _, s := range subs {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}
