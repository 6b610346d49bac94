package modeltext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// secret marks reasoning in FuzzReasoning: it must never reach the text a
// user sees.
const secret = "QZXJSECRET"

// reasoningForms wrap the secret the ways models and servers emit
// reasoning: whole blocks, a block never closed, and a block whose
// opening tag the server dropped (only at the start of an answer).
var reasoningForms = []struct {
	form      string
	startOnly bool
}{
	{"<think>" + secret + "</think>", false},
	{"<thinking>\n" + secret + "\n</thinking>\n", false},
	{"<reasoning>" + secret + "</reasoning>", false},
	{"< Think >" + secret + "</THINK>", false},
	{"<think>" + secret, false}, // never closed: the rest is reasoning
	{secret + "\n</think>\n\n", true},
}

// FuzzReasoning puts reasoning (one of reasoningForms) into any text at any
// byte offset, with control tokens around it, and runs it through what the
// core does to every answer: StripReasoning, then ParseTokens. No secret
// and no known control token ever reaches the text; the answer is the text
// with bytes taken out; reading the answer again changes nothing; and for a
// text without tags the answer keeps every non-space character of it.
func FuzzReasoning(f *testing.F) {
	for _, s := range []struct {
		text string
		at   uint
		form uint8
	}{
		{"Hello there!", 0, 0},
		{"Hello there!", 6, 1},
		{"Good night\n<SILENCE>", 0, 2},
		{"Ok\n<WANT_MORE>", 2, 3},
		{"`<think>` is a tag", 10, 0},
		{"a </think> b <think> c", 3, 4},
		{"x", 0, 5},
		{"Sure<PROACTIVE>{\"delay_seconds\":60}", 4, 0},
		{"<thi", 4, 0},
	} {
		f.Add(s.text, s.at, s.form)
	}
	f.Fuzz(func(t *testing.T, text string, at uint, form uint8) {
		if strings.Contains(strings.ToUpper(text), secret) {
			return
		}
		rf := reasoningForms[int(form)%len(reasoningForms)]
		k := int(at % uint(len(text)+1))
		if rf.startOnly {
			k = 0
		}
		in := text[:k] + rf.form + text[k:]
		answer, _ := StripReasoning(in)
		if strings.Contains(answer, secret) {
			t.Fatalf("StripReasoning(%q) = %q shows the reasoning", in, answer)
		}
		if !isSubsequence(answer, in) {
			t.Fatalf("StripReasoning(%q) = %q is not the text with parts taken out", in, answer)
		}
		if again, r := StripReasoning(answer); again != answer || r != "" {
			t.Fatalf("StripReasoning is not idempotent on %q: %q, %q", answer, again, r)
		}
		p := ParseTokens(answer)
		if strings.Contains(p.Text, secret) || ContainsTokenLike(p.Text) {
			t.Fatalf("the text %q of %q shows reasoning or a token", p.Text, in)
		}
		if !strings.Contains(text, "<") && utf8.ValidString(in) {
			// Nothing in text could be taken for a tag: all of it stays,
			// but what follows a block never closed.
			want := text
			if !strings.Contains(rf.form, "</") {
				want = text[:k]
			}
			if squeeze(answer) != squeeze(want) {
				t.Fatalf("StripReasoning(%q) = %q lost text of %q", in, answer, want)
			}
		}
	})
}

// squeeze drops whitespace.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}
