package modeltext

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// injected are spellings of the known tokens a model may write: any case,
// spaces inside the brackets, closing and self-closing forms, and a
// PROACTIVE with and without its object.
var injected = []string{
	"<SILENCE>", "<silence>", "< SILENCE >", "<SILENCE/>", "</SILENCE>", "<\tSilence\t/ >",
	"<WANT_MORE>", "<want_more>", "< WANT_MORE/>", "</WANT_MORE>",
	"<PROACTIVE>", "<proactive>", "</PROACTIVE>",
	`<PROACTIVE>{"delay_seconds":60,"reason":"check in"}`,
	"<PROACTIVE>\n{\"delay_seconds\": 86400}",
	`<PROACTIVE>{"delay_seconds":`,
	"<FOO_BAR>", "<ABC>",
}

// FuzzParseInjected puts a token (one of injected) into any text at any
// byte offset and checks what a user could see, with an oracle of its own
// rather than the package's regexp: no known token ever survives into the
// text, the text is what the output held with bytes taken out (nothing is
// added or reordered), reading the text again changes nothing and notes
// nothing, and a token on its own last line after clean text does exactly
// what it says while keeping that text as it was.
func FuzzParseInjected(f *testing.F) {
	for _, s := range []struct {
		text string
		at   uint
		tok  uint8
	}{
		{"", 0, 0},
		{"Good night!", 11, 0},
		{"Good night!", 4, 6},
		{"Sure, tell me more", 18, 14},
		{"<SIL ENCE>", 4, 0},
		{"<SILENCE", 8, 17},
		{"a <", 3, 1},
		{"x < y > z", 4, 2},
		{"List<T> and Map<K,V>", 5, 3},
		{"```\n<SILENCE>\n```", 4, 7},
		{"\xff\xfe", 1, 12},
		{"{\"delay_seconds\":5}", 0, 10},
		{"line one\r\nline two\r\n", 10, 8},
		{"<<<>>>", 3, 16},
		{"I <3 you", 3, 13},
		{"\n\n\n", 1, 15},
	} {
		f.Add(s.text, s.at, s.tok)
	}
	f.Fuzz(func(t *testing.T, text string, at uint, which uint8) {
		tok := injected[int(which)%len(injected)]
		at %= uint(len(text) + 1)
		out := text[:at] + tok + text[at:]
		p := ParseTokens(out)

		if name, ok := knownTokenIn(p.Text); ok {
			t.Fatalf("ParseTokens(%q).Text = %q still holds <%s>", out, p.Text, name)
		}
		if !isSubsequence(p.Text, out) {
			t.Fatalf("ParseTokens(%q).Text = %q is not the output with parts taken out", out, p.Text)
		}
		if again := ParseTokens(p.Text); again.Text != p.Text || again.Silence || again.WantMore ||
			again.Proactive != nil || len(again.Notes) > 0 {
			t.Fatalf("ParseTokens is not idempotent on its text %q: %+v", p.Text, again)
		}
		if p.Silence && p.Text != "" {
			t.Fatalf("silent reply with text %q", p.Text)
		}

		// Clean text, then a control block of one token on its own line.
		v := ParseTokens(text).Text
		silent := ParseTokens(v + "\n<SILENCE>")
		if silent.Text != v || silent.Silence != (v == "") || silent.WantMore || silent.Proactive != nil {
			t.Fatalf("clean %q + <SILENCE> parsed to %+v", v, silent)
		}
		more := ParseTokens(v + "\n<WANT_MORE>")
		if more.Text != v || more.WantMore != (v != "") || more.Silence || more.Proactive != nil {
			t.Fatalf("clean %q + <WANT_MORE> parsed to %+v", v, more)
		}
		secs := 1 + int64(at)%int64(MaxProactiveDelay/time.Second)
		pro := ParseTokens(v + fmt.Sprintf("\n<PROACTIVE>{\"delay_seconds\":%d,\"reason\":\"r\"}", secs))
		if pro.Text != v || pro.Proactive == nil || pro.Proactive.Delay != time.Duration(secs)*time.Second ||
			pro.Proactive.Reason != "r" || pro.Proactive.Clamped || pro.WantMore || pro.Silence {
			t.Fatalf("clean %q + <PROACTIVE> of %ds parsed to %+v (%+v)", v, secs, pro, pro.Proactive)
		}
	})
}

// knownTokenIn finds a known token in s without the package's regexp:
// "<", blanks, an optional "/", blanks, a name, blanks, an optional "/",
// blanks, ">", where the name is SILENCE, WANT_MORE or PROACTIVE in any
// case.
func knownTokenIn(s string) (string, bool) {
	blanks := func(i int) int {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		return i
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '<' {
			continue
		}
		j := blanks(i + 1)
		if j < len(s) && s[j] == '/' {
			j = blanks(j + 1)
		}
		k := j
		for k < len(s) && (s[k] == '_' || s[k] >= '0' && s[k] <= '9' || s[k]|0x20 >= 'a' && s[k]|0x20 <= 'z') {
			k++
		}
		name := strings.ToUpper(s[j:k])
		if name != "SILENCE" && name != "WANT_MORE" && name != "PROACTIVE" {
			continue
		}
		e := blanks(k)
		if e < len(s) && s[e] == '/' {
			e = blanks(e + 1)
		}
		if e < len(s) && s[e] == '>' {
			return name, true
		}
	}
	return "", false
}

// isSubsequence reports whether sub is s with some bytes left out.
func isSubsequence(sub, s string) bool {
	i := 0
	for j := 0; j < len(s) && i < len(sub); j++ {
		if sub[i] == s[j] {
			i++
		}
	}
	return i == len(sub)
}

// TestOracles checks the fuzz target's own helpers, so that a broken
// oracle cannot pass everything.
func TestOracles(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"<SILENCE>", "a < silence / > b", "</Want_More>", "<\tPROACTIVE\t>{}"} {
		_, ok := knownTokenIn(s)
		require.True(t, ok, "knownTokenIn(%q)", s)
	}
	for _, s := range []string{"", "<SILENCED>", "<SILENCE", "SILENCE>", "<SIL ENCE>", "<FOO_BAR>", "<_SILENCE>"} {
		_, ok := knownTokenIn(s)
		require.False(t, ok, "knownTokenIn(%q)", s)
	}
	require.True(t, isSubsequence("ace", "abcde"))
	require.False(t, isSubsequence("ca", "abc"))
	require.True(t, isSubsequence("", ""))
}
