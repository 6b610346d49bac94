package modeltext

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStripReasoning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, answer, reasoning string
	}{
		{"no tags", "  Hello there!\n", "Hello there!", ""},
		{"at the start", "<think>The user wants a greeting.</think>\n\nHello there!", "Hello there!", "The user wants a greeting."},
		{"in the middle", "Sure. <think>what time is it there?</think> It is late.", "Sure. It is late.", "what time is it there?"},
		{"at the end", "Hi!\n<think>done</think>", "Hi!", "done"},
		{"thinking and reasoning", "<thinking>a</thinking>Hi <reasoning>b</reasoning>you", "Hi you", "a\n\nb"},
		{"any case and spaces", "< THINK >x</Think >ok", "ok", "x"},
		{"unclosed at the start", "<think>The user wants… and then the server cut me", "", "The user wants… and then the server cut me"},
		{"unclosed after text", "Hello! <think>hmm, maybe", "Hello!", "hmm, maybe"},
		{"opening tag dropped by the server", "The user wants a greeting.\n</think>\n\nHello there!", "Hello there!", "The user wants a greeting."},
		{"stray closing tag amid the answer", "Hello <think>a</think> there </think> you", "Hello there you", "a"},
		{"nested blocks of one name", "<think>a <think>b</think> c</think>Hi", "Hi", "a <think>b</think> c"},
		{"a removal leaves no new tag", "<thi<think>x</think>nk>secret</think>Hi", "", "x\n\nsecretHi"},
		{"tags in backticks are text", "Reasoning models write `<think>` first.", "Reasoning models write `<think>` first.", ""},
		{"other tags stay", "Use <b>bold</b> and List<T>.", "Use <b>bold</b> and List<T>.", ""},
		{"only reasoning", "<think>\n\n</think>\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, r := StripReasoning(tc.in)
			require.Equal(t, tc.answer, a)
			require.Equal(t, tc.reasoning, r)
		})
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Take the bread out!", Clean("<think>they asked for a reminder</think>Take the bread out!\n<WANT_MORE>"))
	require.Equal(t, "Check in", Clean("Check in <SILENCE>"))
	require.Equal(t, "", Clean("<think>unfinished"))
	require.Equal(t, "plain text", Clean("plain text"))
}

func BenchmarkStripReasoning(b *testing.B) {
	plain := strings.Repeat("A reply with **Markdown** and no reasoning at all. ", 12)
	tagged := "<think>" + strings.Repeat("The user wants something. ", 20) + "</think>\n\n" + plain
	b.Run("no tags", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			StripReasoning(plain)
		}
	})
	b.Run("think block", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			StripReasoning(tagged)
		}
	})
}
