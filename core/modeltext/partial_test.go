package modeltext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPartial(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"", ""},
		{"  Hello wor", "Hello wor"},
		{"Hello \n", "Hello"},
		{"Hello <", "Hello"},
		{"Hello <WA", "Hello"},
		{"Hello < SIL", "Hello"},
		{"Hello </ FOO_B", "Hello"},
		{"Hello <SILENCE/ ", "Hello"},
		{"a < b", "a < b"},
		{"a <b", "a <b"},
		{"List<T", "List"}, // an uppercase name may still become <TOKEN>
		{"List<Tx", "List<Tx"},
		{"<thi<", ""},
		{"x <3", "x <3"},
		{"Map<Kx", "Map<Kx"},
		{"<SILENCE", ""},
		{"<SILENCE>", ""},
		{" <silence> \n", ""},
		{"Hi\n<WANT_MORE", "Hi"},
		{"Hi\n<WANT_MORE>\n", "Hi"},
		{"Hi <WANT_MORE> there", "Hi there"},
		{"Ok\n<PROACTIVE>\n{\"delay_seconds\": 6", "Ok"},
		{"Ok <PROACTIVE>{\"delay_seconds\": 60} more", "Ok more"},
		{"<thi", ""},
		{"<think>I wonder", ""},
		{"Sure. <think>hmm", "Sure."},
		{"<think>hmm</think>\n\nYes", "Yes"},
		{"<think>a<think>b</think>c", ""},
		{"<think>hmm</thi", ""},
		{"<Thinking >x</THINKING> ok", "ok"},
		{"`<think>", "`"},
		{"`<think>` is a tag", "`<think>` is a tag"},
		{"<SIL<ABC>ENC", ""},
		{"a <thi<think>x</think>nk", "a"},
		{"café \xc3", "café"},
		{"😀\xf0\x9f", "😀"},
		{"\xff", "\xff"},
	} {
		if got := Partial(c.raw); got != c.want {
			t.Errorf("Partial(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

// partialAnswers are whole answers with tokens and reasoning in the
// places that are easy to get wrong; every prefix of each is checked.
var partialAnswers = []string{
	"Hello there, how are you?",
	"<SILENCE>",
	"  \n< silence / >\n",
	"<think>the user says hi</think><SILENCE>",
	"Sure!\n<WANT_MORE>",
	"Sure!\n\n<WANT_MORE>\n\n",
	"Text <WANT_MORE> in the middle",
	"Ok, talk later.\n<PROACTIVE>\n{\"delay_seconds\": 3600, \"reason\": \"ask about <SILENCE> bread\"}",
	"Ok <PROACTIVE>{\"delay_seconds\": x\nand then",
	"<think>plan: say <SILENCE></think>Hello",
	"<think>a<think>b</think>c</think>d",
	"<thi<think>x</think>nk>y</think>z",
	"<SIL<ABC>ENCE> and <WA<X_Y>NT_MORE>",
	"`<think>` is a tag, `</think>` too",
	"Use `List<T>` and Map<K,V>; I <3 you <b>bold</b>",
	"```go\n<WANT_MORE>\nfunc f() {}\n```\n<SILENCE>",
	"para one\n\n<FOO_BAR>\n\npara two",
	"héllo 😀 <WANT_MORE> 👩‍👩‍👧‍👦 done",
	"\xff\xfe<SILENCE>\xc3",
	"a\r\n<WANT_MORE>\r\n",
	"<reasoning>r</reasoning>\n<thinking>\nt\n</thinking>\nanswer",
	"x `</think>` y",
}

// droppedOpening reports whether StripReasoning reads the start of s as
// reasoning whose opening tag was dropped: some pass of it meets a closing
// tag first. Partial cannot know that before the tag comes.
func droppedOpening(s string) bool {
	for {
		tags := findTags(s)
		if len(tags) == 0 {
			return false
		}
		if tags[0].closing {
			return true
		}
		s, _, _ = stripOnce(s)
	}
}

// partialProblem checks Partial over every byte prefix of raw against
// what the core finally shows of raw (Clean), and says what is wrong.
func partialProblem(raw string) string {
	final := Clean(raw)
	exception := droppedOpening(raw)
	prev := ""
	for k := 0; k <= len(raw); k++ {
		p := Partial(raw[:k])
		switch {
		case ContainsTokenLike(p):
			return "token-like text shows in Partial(" + quote(raw[:k]) + ") = " + quote(p)
		case utf8.ValidString(raw) && !utf8.ValidString(p):
			return "Partial(" + quote(raw[:k]) + ") is not valid UTF-8: " + quote(p)
		case exception:
			continue
		case !strings.HasPrefix(final, p):
			return "Partial(" + quote(raw[:k]) + ") = " + quote(p) + " is not a prefix of the final " + quote(final)
		case !strings.HasPrefix(p, prev):
			return "Partial(" + quote(raw[:k]) + ") = " + quote(p) + " does not extend " + quote(prev)
		}
		prev = p
	}
	if exception {
		return ""
	}
	// At the end all shows, but for a last tag or character that more
	// text could still finish (Partial cannot know the answer ended).
	if got := Partial(raw); got != final && utf8.ValidString(final) && !strings.Contains(final, "<") {
		return "the whole answer shows " + quote(got) + ", the final " + quote(final)
	}
	return ""
}

func TestPartialPrefixes(t *testing.T) {
	for _, raw := range partialAnswers {
		if p := partialProblem(raw); p != "" {
			t.Error(p)
		}
	}
}

// TestPartialDroppedOpening pins the documented exception down: before
// the closing tag the text shows, after it only the answer does; and
// "<think>"+raw shows nothing before it.
func TestPartialDroppedOpening(t *testing.T) {
	raw := "the user greets me</think>\n\nHello!"
	if got := Partial(raw[:10]); got != "the user g" {
		t.Errorf("before the tag: %q", got)
	}
	if got := Partial(raw); got != "Hello!" {
		t.Errorf("after the tag: %q", got)
	}
	for k := range len(raw) {
		if got := Partial("<think>" + raw[:k]); got != "" && !strings.HasPrefix("Hello!", got) {
			t.Errorf("with <think> prefixed, %q shows %q", raw[:k], got)
		}
	}
}

func quote(s string) string {
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ReplaceAll(strings.ReplaceAll(`"`+s+`"`, "\n", `\n`), "\r", `\r`)
}
