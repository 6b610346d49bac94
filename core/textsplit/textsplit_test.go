package textsplit_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/textsplit"
)

func TestSplitTextShortIsOnePart(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"hello"}, textsplit.Split("hello", 10))
	require.Equal(t, []string{"hello"}, textsplit.Split("hello", 0))
}

func TestSplitTextKeepsEverythingInOrder(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	for i := range 200 {
		sb.WriteString(strings.Repeat("wörd ", i%13+1))
		if i%7 == 0 {
			sb.WriteString("\n\n")
		} else {
			sb.WriteString("\n")
		}
	}
	text := sb.String()
	for _, max := range []int{17, 50, 100, 2000} {
		parts := textsplit.Split(text, max)
		require.Greater(t, len(parts), 1)
		for _, p := range parts {
			require.LessOrEqual(t, utf8.RuneCountInString(p), max)
			require.NotEmpty(t, p)
		}
		require.Equal(t, text, strings.Join(parts, ""), "max %d: nothing lost, nothing reordered", max)
	}
}

func TestSplitTextPrefersParagraphs(t *testing.T) {
	t.Parallel()
	text := "first paragraph here\n\nsecond one\n\nthird"
	parts := textsplit.Split(text, 25)
	require.Equal(t, []string{"first paragraph here\n\n", "second one\n\nthird"}, parts)
}

func TestSplitTextHardSplitsAWordlessRun(t *testing.T) {
	t.Parallel()
	parts := textsplit.Split(strings.Repeat("x", 25), 10)
	require.Equal(t, []string{strings.Repeat("x", 10), strings.Repeat("x", 10), strings.Repeat("x", 5)}, parts)
}

func TestSplitTextKeepsCodeBlocksWhole(t *testing.T) {
	t.Parallel()
	code := "```go\nfunc main() {\n\tprintln(1)\n}\n```\n"
	text := strings.Repeat("intro words ", 5) + "\n\n" + code + "\nafter"
	parts := textsplit.Split(text, 70)
	require.Equal(t, text, strings.Join(parts, ""))
	found := false
	for _, p := range parts {
		if strings.Contains(p, "```go") {
			require.Contains(t, p, code, "the code block is in one part")
			found = true
		}
	}
	require.True(t, found)
}

func TestSplitTextReopensALongCodeBlock(t *testing.T) {
	t.Parallel()
	var body strings.Builder
	for i := range 40 {
		body.WriteString("line of code number ")
		body.WriteString(strings.Repeat("#", i%5))
		body.WriteString("\n")
	}
	text := "```py\n" + body.String() + "```\n"
	parts := textsplit.Split(text, 120)
	require.Greater(t, len(parts), 1)
	var rebuilt strings.Builder
	for _, p := range parts {
		require.LessOrEqual(t, utf8.RuneCountInString(p), 120)
		require.True(t, strings.HasPrefix(p, "```py\n"), "part %q opens the fence", p)
		require.True(t, strings.HasSuffix(p, "```\n"), "part %q closes the fence", p)
		rebuilt.WriteString(strings.TrimSuffix(strings.TrimPrefix(p, "```py\n"), "```\n"))
	}
	require.Equal(t, body.String(), rebuilt.String(), "every code line arrives once, in order")
}
