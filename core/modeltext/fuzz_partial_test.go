package modeltext

import (
	"testing"
)

// partialForms are what FuzzPartial puts into a text: reasoning and
// control tokens in the spellings models use, cut or whole.
var partialForms = []string{
	"", "<SILENCE>", "< silence />", "\n<WANT_MORE>\n", "<want_more>",
	"<PROACTIVE>{\"delay_seconds\": 60, \"reason\": \"x\"}", "<PROACTIVE>\n{\"delay_se",
	"<FOO_BAR>", "</SILENCE>", "<think>r</think>", "<Thinking >r", "</think>",
	"`<think>`", "<SIL", "<thi", "<", "<ABC>", "\n\n", "```\n",
}

// FuzzPartial checks, for any answer (a text with one of partialForms put
// in at any byte), every byte prefix of it: no token-like text ever shows,
// the shown text stays valid UTF-8 when the answer is, and — unless a
// closing reasoning tag comes before any opening one (Partial's one
// exception: the text before it is reasoning only once the tag comes) —
// what shows is a prefix of what the core finally shows of the whole
// answer (Clean), grows monotonically, and is all of it at the end. Run it
// with go test -run '^$' -fuzz '^FuzzPartial$' ./core/modeltext.
func FuzzPartial(f *testing.F) {
	for _, a := range partialAnswers {
		f.Add(a, uint(0), uint8(0))
	}
	f.Add("Hello there", uint(5), uint8(1))
	f.Add("Hello there", uint(11), uint8(2))
	f.Add("Hi", uint(0), uint8(9))
	f.Add("Hi <thi", uint(4), uint8(9))
	f.Add("x `y", uint(3), uint8(11))
	f.Add("😀 ok", uint(2), uint8(13))
	f.Add("```go\nfmt.Println()\n", uint(6), uint8(4))
	f.Fuzz(func(t *testing.T, text string, at uint, form uint8) {
		if len(text) > 2048 {
			return // every prefix is checked: keep a run short
		}
		k := int(at % uint(len(text)+1))
		raw := text[:k] + partialForms[int(form)%len(partialForms)] + text[k:]
		if p := partialProblem(raw); p != "" {
			t.Fatalf("answer %s: %s", quote(raw), p)
		}
	})
}
