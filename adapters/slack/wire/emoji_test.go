package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every emoji of the table maps to its first name and back, from every
// name, with or without a skin tone; an unknown name stays as it is.
func TestEmojiTableRoundTrips(t *testing.T) {
	t.Parallel()
	for _, e := range EmojiTable() {
		name, ok := ReactionName(e.Emoji)
		require.True(t, ok, e.Emoji)
		require.Equal(t, e.Names[0], name)
		for _, n := range e.Names {
			require.Equal(t, e.Emoji, EmojiOf(n), n)
			require.Equal(t, e.Emoji, EmojiOf(n+"::skin-tone-2"), n)
		}
	}
	require.Equal(t, "partyparrot", EmojiOf("partyparrot"))
}

func TestReactionName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"👍": "+1", "👍🏽": "+1", "❤": "heart", "❤️": "heart", ":tada:": "tada", "thumbsup": "thumbsup",
		" fire ": "fire", "+1::skin-tone-3": "+1::skin-tone-3", ":partyparrot:": "partyparrot",
	} {
		got, ok := ReactionName(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "🦩", "not an emoji", "Thumbsup", "+1::skin-tone-7", "::", ":"} {
		_, ok := ReactionName(bad)
		require.False(t, ok, bad)
	}
}
