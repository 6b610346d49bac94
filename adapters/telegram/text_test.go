package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestUTF16Len(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, utf16Len(""))
	require.Equal(t, 5, utf16Len("hello"))
	require.Equal(t, 3, utf16Len("日本語"), "BMP characters are one unit")
	require.Equal(t, 2, utf16Len("😀"), "characters outside the BMP are two units")
	require.Equal(t, 4, utf16Len("a😀b"))
}

// requireSplit checks parts against text: each within limit by cost, no
// empty part, and together exactly the text.
func requireSplit(t *testing.T, text string, parts []string, limit int, cost func(string) int) {
	t.Helper()
	require.NotEmpty(t, parts)
	for i, p := range parts {
		require.LessOrEqual(t, cost(p), limit, "part %d of %d is over the limit", i+1, len(parts))
		require.True(t, utf8.ValidString(p), "part %d was cut inside a character", i+1)
		require.NotEmpty(t, strings.TrimSpace(p), "part %d is blank", i+1)
	}
	require.Equal(t, text, strings.Join(parts, ""), "nothing lost, nothing reordered")
}

func TestSplitMessage(t *testing.T) {
	t.Parallel()
	t.Run("short text is one part", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, []string{"hi there"}, splitMessage("hi there", maxMessageLength))
	})
	t.Run("empty text has no parts", func(t *testing.T) {
		t.Parallel()
		require.Empty(t, splitMessage("", maxMessageLength))
		require.Empty(t, splitMessage(" \n\n ", maxMessageLength))
	})
	t.Run("long text splits at the limit", func(t *testing.T) {
		t.Parallel()
		text := strings.Repeat("word ", 1000) // 5000 characters
		parts := splitMessage(text, maxMessageLength)
		require.Len(t, parts, 2)
		requireSplit(t, text, parts, maxMessageLength, utf16Len)
	})
	t.Run("emoji count twice", func(t *testing.T) {
		t.Parallel()
		// 4000 runes fit textsplit.Split's limit but are 8000 UTF-16 units.
		text := strings.Repeat("😀", 4000)
		parts := splitMessage(text, maxMessageLength)
		require.Len(t, parts, 2)
		requireSplit(t, text, parts, maxMessageLength, utf16Len)
	})
	t.Run("emoji-heavy words split between words", func(t *testing.T) {
		t.Parallel()
		text := strings.Repeat("😀😀😀 hi ", 900) // 8100 runes, 10800 units
		parts := splitMessage(text, maxMessageLength)
		requireSplit(t, text, parts, maxMessageLength, utf16Len)
		for _, p := range parts[:len(parts)-1] {
			require.True(t, strings.HasSuffix(p, " "), "parts end at a space")
		}
	})
	t.Run("a code block cut for length keeps its fence", func(t *testing.T) {
		t.Parallel()
		var b strings.Builder
		b.WriteString("```go\n")
		for range 400 {
			b.WriteString("x := \"😀😀😀😀\"\n") // 15 runes, 19 units
		}
		b.WriteString("```\n")
		parts := splitMessage(b.String(), maxMessageLength)
		require.Greater(t, len(parts), 1)
		for i, p := range parts {
			require.LessOrEqual(t, utf16Len(p), maxMessageLength, "part %d", i+1)
			require.True(t, strings.HasPrefix(p, "```go\n"), "part %d reopens the fence", i+1)
			require.True(t, strings.HasSuffix(p, "```\n"), "part %d closes the fence", i+1)
		}
	})
	t.Run("small limit", func(t *testing.T) {
		t.Parallel()
		text := "ab😀cd😀😀e"
		parts := splitMessage(text, 3)
		requireSplit(t, text, parts, 3, utf16Len)
	})
}
