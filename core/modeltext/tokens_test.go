package modeltext

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	const breadJSON = `{"delay_seconds":3600,"reason":"check on the bread"}`
	bread := &Proactive{Delay: time.Hour, Reason: "check on the bread"}
	minute := &Proactive{Delay: time.Minute}
	week := &Proactive{Delay: MaxProactiveDelay, Clamped: true}
	for _, tc := range []struct {
		name      string
		in        string
		text      string
		silence   bool
		wantMore  bool
		proactive *Proactive
		note      string // a substring of the notes; "" means no notes
	}{
		// Plain text and rule 7.
		{name: "plain text", in: "Hello there!", text: "Hello there!"},
		{name: "whitespace and markdown kept", in: "  **Hi**\n\n- a  b\n  - c\t\n", text: "**Hi**\n\n- a  b\n  - c"},
		{name: "empty", in: "  \n\t "},

		// Rule 5: silence.
		{name: "silence alone", in: "<SILENCE>", silence: true},
		{name: "self-closing silence", in: "<SILENCE/>", silence: true},
		{name: "self-closing want more", in: "More\n<WANT_MORE />", text: "More", wantMore: true},
		{name: "self-closing unknown", in: "Hi <FOO_BAR/> there", text: "Hi there", note: "stripped unknown token"},
		{name: "silence, lower case and spaced", in: " <silence> ", silence: true},
		{name: "silence, spaces inside the brackets", in: "< SILENCE >\n\n", silence: true},
		{name: "silence with text", in: "Sleep well.\n<SILENCE>", text: "Sleep well.", note: "ignored <SILENCE>: the reply has text"},
		{name: "silence before the text", in: "<SILENCE> Sleep well.", text: "Sleep well.", note: "ignored <SILENCE>: the reply has text"},
		{name: "silence twice", in: "<SILENCE>\n<SILENCE>", silence: true, note: "ignored a second <SILENCE>"},
		{name: "silence amid nothing but tokens", in: "<FOO_BAR> <SILENCE>", silence: true, note: "stripped unknown token <FOO_BAR>"},

		// Rules 4 and 6: want more.
		{name: "want more", in: "Hello\n<WANT_MORE>", text: "Hello", wantMore: true},
		{name: "want more, trailing blank lines", in: "Hello\n<want_more>\n\n  \n", text: "Hello", wantMore: true},
		{name: "want more mid-text", in: "Hello <WANT_MORE> there", text: "Hello there", note: "ignored <WANT_MORE> in the middle of the text"},
		{name: "want more on the text's line", in: "Hello <WANT_MORE>", text: "Hello", note: "ignored <WANT_MORE> in the middle of the text"},
		{name: "want more on its own line amid text", in: "Hello\n<WANT_MORE>\nthere", text: "Hello\nthere", note: "ignored <WANT_MORE> in the middle of the text"},
		{name: "want more between paragraphs", in: "One.\n\n<WANT_MORE>\n\nTwo.", text: "One.\n\nTwo.", note: "ignored <WANT_MORE> in the middle of the text"},
		{name: "tokens between paragraphs", in: "One.\n\n<ABC>\n\n<ABC>\n\nTwo.\n<ABC>\n\nThree.", text: "One.\n\nTwo.\n\nThree.", note: "stripped unknown token <ABC>"},
		{name: "want more twice", in: "Ok\n<WANT_MORE>\n<WANT_MORE>", text: "Ok", wantMore: true, note: "ignored a second <WANT_MORE>"},
		{name: "want more with nothing said", in: "<WANT_MORE>", note: "ignored <WANT_MORE>: the reply has no text"},
		{name: "want more when silent", in: "<SILENCE>\n<WANT_MORE>", silence: true, note: "ignored <WANT_MORE>: the reply is silent"},

		// Rules 2 and 3: proactive.
		{name: "proactive", in: "Sure!\n<PROACTIVE>" + breadJSON, text: "Sure!", proactive: bread},
		{name: "proactive, lower case, object on the next line", in: "Sure!\n<proactive>\n" + breadJSON + "\n", text: "Sure!", proactive: bread},
		{name: "proactive, pretty JSON", in: "Sure!\n<PROACTIVE> {\n  \"delay_seconds\": 3600,\n  \"reason\": \"check on the bread\"\n}\n", text: "Sure!", proactive: bread},
		{name: "proactive, braces in a string", in: "Sure!\n<PROACTIVE>" + `{"reason":"say } hi","delay_seconds":60}`, text: "Sure!", proactive: &Proactive{Delay: time.Minute, Reason: "say } hi"}},
		{name: "proactive and want more in the block", in: "Sure!\n<WANT_MORE>\n<PROACTIVE>" + breadJSON, text: "Sure!", wantMore: true, proactive: bread},
		{name: "proactive and want more on one line", in: "Sure!\n<PROACTIVE>" + breadJSON + " <WANT_MORE>", text: "Sure!", wantMore: true, proactive: bread},
		{name: "two proactive", in: "Ok\n<PROACTIVE>" + breadJSON + "\n<PROACTIVE>{\"delay_seconds\":60}", text: "Ok", proactive: bread, note: "ignored a second <PROACTIVE>"},
		{name: "no object", in: "Ok\n<PROACTIVE>", text: "Ok", note: "ignored <PROACTIVE>: no JSON object after it"},
		{name: "object after a blank line is text", in: "Ok\n<PROACTIVE>\n\n{\"delay_seconds\":60}", text: "Ok\n\n{\"delay_seconds\":60}", note: "ignored <PROACTIVE> in the middle of the text"},
		{name: "malformed JSON", in: "Ok\n<PROACTIVE>{delay_seconds: 60}", text: "Ok", note: "ignored <PROACTIVE>: its JSON object is not valid"},
		{name: "malformed JSON, then text", in: "Ok\n<PROACTIVE>{delay_seconds: 60} bye\nSee you", text: "Ok\nSee you", note: "ignored <PROACTIVE> in the middle of the text"},
		{name: "half JSON at the end", in: "Ok\n<PROACTIVE>" + `{"delay_seconds": 36`, text: "Ok", note: "ignored <PROACTIVE>: its JSON object is cut short"},
		{name: "half pretty JSON at the end", in: "Ok\n<PROACTIVE>{\n  \"delay_seconds\": 36", text: "Ok", note: "its JSON object is cut short"},
		{name: "trailing garbage inside", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":60 x}`, text: "Ok", note: "its JSON object is not valid"},
		{name: "unknown field", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":60,"mood":"happy"}`, text: "Ok", note: `unknown field "mood"`},
		{name: "field in the wrong case", in: "Ok\n<PROACTIVE>" + `{"Delay_Seconds":60}`, text: "Ok", note: `unknown field "Delay_Seconds"`},
		{name: "string delay", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":"60"}`, text: "Ok", note: "delay_seconds is not a number"},
		{name: "null delay", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":null}`, text: "Ok", note: "delay_seconds is missing"},
		{name: "missing delay", in: "Ok\n<PROACTIVE>" + `{"reason":"x"}`, text: "Ok", note: "delay_seconds is missing"},
		{name: "fractional delay", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":1.5}`, text: "Ok", note: "delay_seconds is not a whole number"},
		{name: "whole float delay", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":60.0}`, text: "Ok", proactive: minute},
		{name: "reason not a string", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":60,"reason":7}`, text: "Ok", note: "reason is not a string"},
		{name: "zero delay", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":0}`, text: "Ok", note: "delay_seconds is not after now"},
		{name: "negative delay", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":-5}`, text: "Ok", note: "delay_seconds is not after now"},
		{name: "seven days exactly", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":604800}`, text: "Ok", proactive: &Proactive{Delay: MaxProactiveDelay}},
		{name: "eight days", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":691200}`, text: "Ok", proactive: week, note: "clamped the <PROACTIVE> delay"},
		{name: "delay out of float range", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":1e400}`, text: "Ok", proactive: week, note: "clamped"},
		{name: "a bad request, then a good one", in: "Ok\n<PROACTIVE>{\"delay_seconds\":0}\n<PROACTIVE>" + breadJSON, text: "Ok", proactive: bread, note: "not after now"},
		{name: "proactive mid-text", in: `Hi <PROACTIVE>{"delay_seconds":60,"reason":"x"} there`, text: "Hi there", note: "ignored <PROACTIVE> in the middle of the text"},
		{name: "proactive mid-text, pretty JSON", in: "Hi <PROACTIVE>{\n\"delay_seconds\": 60\n}\nthere", text: "Hi\nthere", note: "ignored <PROACTIVE> in the middle of the text"},
		{name: "silence and proactive", in: "<SILENCE>\n<PROACTIVE>" + breadJSON, silence: true, proactive: bread},
		{name: "proactive with no text", in: "<PROACTIVE>" + breadJSON, proactive: bread},
		{name: "reason with a token", in: "Ok\n<PROACTIVE>" + `{"delay_seconds":60,"reason":" ask <SILENCE> about it "}`, text: "Ok", proactive: &Proactive{Delay: time.Minute, Reason: "ask about it"}},
		{name: "silence inside a reason", in: "<PROACTIVE>" + `{"delay_seconds":60,"reason":"<SILENCE>"}`, proactive: minute},

		// Rule 1: unknown, closing and ordinary text.
		{name: "unknown token", in: "Hi <FOO_BAR> there", text: "Hi there", note: "stripped unknown token <FOO_BAR>"},
		{name: "unknown token alone on a line", in: "Hi\n  <FOO_BAR>  \nthere", text: "Hi\nthere", note: "stripped unknown token <FOO_BAR>"},
		{name: "unknown token keeps indentation", in: "code:\n    x := 1\n    <ABC> y := 2", text: "code:\n    x := 1\n    y := 2", note: "stripped unknown token <ABC>"},
		{name: "unknown token between words", in: "a<ABC>b", text: "ab", note: "stripped unknown token <ABC>"},
		{name: "closing token", in: "Hi\n</WANT_MORE>", text: "Hi", note: "stripped closing token </WANT_MORE>"},
		{name: "closing silence", in: "Hi </SILENCE>", text: "Hi", note: "stripped closing token </SILENCE>"},
		{name: "ordinary angle brackets kept", in: "<b>bold</b><br> <div>x</div>, List<T>, Map<K,V>, Optional<String>, I <3 you, a <Ab> b", text: "<b>bold</b><br> <div>x</div>, List<T>, Map<K,V>, Optional<String>, I <3 you, a <Ab> b"},

		// Rule 8: tokens made by a removal.
		{name: "a token made by removal", in: "<SIL<ABC>ENCE>", note: "stripped <SILENCE>, made by removing another token"},
		{name: "a token made by removal amid text", in: "Hi <WANT_<X_Y>MORE> there!\n<WANT_MORE>", text: "Hi there!", wantMore: true, note: "made by removing another token"},
		{name: "tokens made twice over", in: "x <<<ABC>ABC>ABC> y", text: "x y", note: "made by removing another token"},

		// Windows line endings stay as written.
		{name: "windows line endings", in: "Hello\r\nthere\r\n<WANT_MORE>\r\n<PROACTIVE>" + breadJSON + "\r\n", text: "Hello\r\nthere", wantMore: true, proactive: bread},
		{name: "windows line endings, pretty JSON", in: "Hi\r\n<PROACTIVE>\r\n{\r\n\"delay_seconds\": 3600,\r\n\"reason\": \"check on the bread\"\r\n}\r\n", text: "Hi", proactive: bread},
		{name: "windows line endings, token amid text", in: "a <ABC>\r\nb", text: "a\r\nb", note: "stripped unknown token <ABC>"},

		// Rule 9.
		{name: "invalid UTF-8", in: "\xff<SILENCE>\xfe", text: "\xff\xfe", note: "ignored <SILENCE>: the reply has text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := ParseTokens(tc.in)
			require.Equal(t, tc.text, p.Text, "text")
			require.Equal(t, tc.silence, p.Silence, "silence")
			require.Equal(t, tc.wantMore, p.WantMore, "want more")
			require.Equal(t, tc.proactive, p.Proactive, "proactive")
			if tc.note == "" {
				require.Empty(t, p.Notes, "notes")
			} else {
				require.Contains(t, strings.Join(p.Notes, "\n"), tc.note, "notes")
			}
			require.False(t, ContainsTokenLike(p.Text))
		})
	}
}

func TestParseNotesOnePerToken(t *testing.T) {
	t.Parallel()
	p := ParseTokens("Hi <ABC> <WANT_MORE> <SILENCE> there\n</SILENCE>")
	require.Equal(t, "Hi there", p.Text)
	require.Equal(t, []string{
		"stripped unknown token <ABC>",
		"ignored <WANT_MORE> in the middle of the text",
		"stripped closing token </SILENCE>",
		"ignored <SILENCE>: the reply has text",
	}, p.Notes)
}

func TestParseDeepNesting(t *testing.T) {
	t.Parallel()
	// One level of nesting must not cost a pass over the whole text.
	const n = 100000
	p := ParseTokens("Hi <" + strings.Repeat("<", n) + strings.Repeat("ABC>", n) + "SILENCE> there")
	require.Equal(t, "Hi there", p.Text)
	require.Len(t, p.Notes, n+1)
	require.False(t, p.Silence)
}

func TestParseLongReasonIsCut(t *testing.T) {
	t.Parallel()
	p := ParseTokens("Ok\n<PROACTIVE>" + `{"delay_seconds":60,"reason":"` + strings.Repeat("é", 600) + `"}`)
	require.NotNil(t, p.Proactive)
	require.Equal(t, strings.Repeat("é", MaxReasonRunes), p.Proactive.Reason)
}

func TestContainsTokenLike(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"<SILENCE>": true, "<silence>": true, "<Want_More>": true, "</WANT_MORE>": true,
		"< PROACTIVE >": true, "<FOO_BAR>": true, "<ABC>": true, "<A12>": true, "x<\tX_1\t>y": true,
		"": false, "<b>": false, "<br>": false, "<div>": false, "List<T>": false, "Map<K,V>": false,
		"Optional<String>": false, "<AB>": false, "<Ab>": false, "<Foo>": false, "a <3 b": false,
		"<1AB>": false, "<_AB>": false, "<SILENCE": false, "SILENCE>": false, "<SIL\nENCE>": false,
	} {
		require.Equal(t, want, ContainsTokenLike(s), "%q", s)
	}
}
