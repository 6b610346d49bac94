package modeltext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse checks the parser's promises on any input: it never panics,
// nothing token-like survives, text without tokens is kept as written
// with nothing honoured, and what it honours is in bounds.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"",
		"hello",
		"<SILENCE>",
		" <silence> \n",
		"Hi\n<WANT_MORE>",
		"Hi <WANT_MORE> there",
		"Ok\n<PROACTIVE>" + `{"delay_seconds":3600,"reason":"bread"}`,
		"Ok\n<PROACTIVE>" + `{"delay_seconds": 36`,
		"<PROACTIVE>" + `{"delay_seconds":1e400,"reason":"<SILENCE> x"}`,
		"<SIL<ABC>ENCE>",
		"<PRO<X_Y>ACTIVE>{\"delay_seconds\":5}",
		"</SILENCE> <FOO_BAR> < WANT_MORE >",
		"<b>x</b> List<T> Map<K,V> I <3 you",
		"\xff<SILENCE>\xfe",
		"a\r\n<WANT_MORE>\r\n",
		"<PROACTIVE>\n{\n\"delay_seconds\": 60\n}\n<SILENCE>",
		"x <ABC>\n\n<ABC>  \n  y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p := ParseTokens(in)
		if ContainsTokenLike(p.Text) {
			t.Fatalf("token-like text survived in %q", p.Text)
		}
		if !ContainsTokenLike(in) {
			if p.Text != strings.TrimSpace(in) || p.Silence || p.WantMore || p.Proactive != nil || len(p.Notes) > 0 {
				t.Fatalf("text without tokens parsed to %+v", p)
			}
		}
		for _, n := range p.Notes {
			if strings.Contains(n, "\n") {
				t.Fatalf("note %q is not one line", n)
			}
		}
		again := ParseTokens(p.Text)
		if again.Text != p.Text || again.Silence || again.WantMore || again.Proactive != nil {
			t.Fatalf("clean text %q parsed again to %+v", p.Text, again)
		}
		if p.Silence && (p.Text != "" || p.WantMore) {
			t.Fatalf("silent with text %q or want more", p.Text)
		}
		if p.WantMore && p.Text == "" {
			t.Fatal("want more with nothing said")
		}
		if r := p.Proactive; r != nil {
			if r.Delay <= 0 || r.Delay > MaxProactiveDelay {
				t.Fatalf("delay %v out of bounds", r.Delay)
			}
			if ContainsTokenLike(r.Reason) || utf8.RuneCountInString(r.Reason) > MaxReasonRunes {
				t.Fatalf("bad reason %q", r.Reason)
			}
		}
	})
}
