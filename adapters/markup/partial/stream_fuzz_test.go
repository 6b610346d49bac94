package partial_test

import (
	"strings"
	"testing"

	"github.com/parleybot/parley/adapters/markup/partial"
	"github.com/parleybot/parley/core/modeltext"
)

// streamSecret marks reasoning: no partial may ever show it.
const streamSecret = "QZXJSECRET"

// streamForms are what FuzzStreamedReply puts into an answer: reasoning
// (holding the secret) and control tokens, whole or cut.
var streamForms = []string{
	"<think>" + streamSecret + "</think>",
	"<Thinking >\n" + streamSecret + "\n</THINKING>\n\n",
	"<reasoning>" + streamSecret, // never closed
	"<SILENCE>", "< silence />", "\n<WANT_MORE>", "<want_more>",
	"\n<PROACTIVE>\n{\"delay_seconds\": 60, \"reason\": \"**x** " + streamSecret + "\"}",
	"<FOO_BAR>", "</SILENCE>", "`<think>`", "<SIL", "**", "```\n", "[link](http://e.com/x_y)",
}

// streamProblem runs every byte prefix of raw through what the engine
// does while a reply streams (modeltext.Partial, then partial.Markdown,
// then each renderer) and says what a user would see wrong: reasoning, a
// control token, a refused rendering, a raw marker the finished reply does
// not show, or anything at all of a reply that is a silence.
func streamProblem(raw string) string {
	final := modeltext.Clean(raw)
	secretShows := strings.Contains(final, streamSecret)
	for _, fl := range shownFlavors {
		finalRead, err := fl.read(fl.render(final))
		if err != nil {
			return "" // the renderer's own fuzz target covers this
		}
		want := countMarkers(finalRead.Text)
		checkCounts := !refDefinition.MatchString(final) && !misread(fl, final, finalRead)
		exception := false
		// Rendering can make token-like text of what was none (a code
		// span turns "<\nABC>" into "< ABC>"): the finished reply's own.
		tokenInFinal := modeltext.ContainsTokenLike(finalRead.Text)
		for k := 0; k <= len(raw); k++ {
			text := modeltext.Partial(raw[:k])
			if !strings.HasPrefix(final, text) {
				// modeltext.Partial's one exception (a closing reasoning
				// tag first), pinned down by its own fuzz target.
				exception = true
			}
			md := partial.Markdown(text)
			shown, err := fl.read(fl.render(md))
			switch {
			case err != nil:
				return fl.name + ": the partial " + q(md) + " is refused: " + err.Error()
			case !secretShows && strings.Contains(shown.Text, streamSecret):
				return fl.name + ": reasoning shows in " + q(shown.Text)
			case modeltext.ContainsTokenLike(shown.Text) && !tokenInFinal:
				return fl.name + ": a control token shows in " + q(shown.Text)
			case final == "" && shown.Text != "" && !exception:
				return fl.name + ": the reply is silent but shows " + q(shown.Text)
			}
			got := countMarkers(shown.Text)
			for i := range got {
				if checkCounts && !exception && got[i] > want[i] && !misread(fl, md, shown) {
					return fl.name + ": " + q(md) + " shows " + q(shown.Text) + ": more " + rawMarkers[i:i+1] +
						" than the finished reply shows: " + q(finalRead.Text)
				}
			}
		}
	}
	return ""
}

// FuzzStreamedReply puts reasoning or a control token (streamForms) into
// any answer at any byte and checks every byte prefix of it as the engine
// will show it (see streamProblem). Run it with
// go test -run '^$' -fuzz '^FuzzStreamedReply$' ./adapters/markup/partial.
func FuzzStreamedReply(f *testing.F) {
	for _, s := range []struct {
		text string
		at   uint
		form uint8
	}{
		{"Hello **there**, how are you?", 0, 0},
		{"Good night 😴", 11, 3},
		{"Sure:\n```go\nfmt.Println(\"<SILENCE>\")\n```\nDone.", 6, 5},
		{"Here is *one* and `two` 👩‍👩‍👧‍👦", 9, 1},
		{"Ok, later.", 10, 7},
		{"- a\n- b *c*", 4, 2},
		{"x", 1, 4},
		{"café \xc3\xa9 \xff", 3, 11},
		{"A [link](http://e.com) and more", 2, 14},
		{"para\n\n", 6, 6},
	} {
		f.Add(s.text, s.at, s.form)
	}
	f.Fuzz(func(t *testing.T, text string, at uint, form uint8) {
		if len(text) > 512 || strings.Contains(strings.ToUpper(text), streamSecret) {
			return // every prefix is rendered five times: keep a run short
		}
		k := int(at % uint(len(text)+1))
		raw := text[:k] + streamForms[int(form)%len(streamForms)] + text[k:]
		if p := streamProblem(raw); p != "" {
			t.Fatalf("answer %s: %s", q(raw), p)
		}
	})
}
