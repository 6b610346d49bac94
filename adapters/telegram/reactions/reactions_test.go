package reactions_test

import (
	"testing"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/reactions"
	"github.com/parleybot/parley/core"
)

func TestPick(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"👍": "👍", " 🔥 ": "🔥", "❤️": "❤", "❤": "❤", "👍🏽": "👍", "✍️": "✍", "❤️‍🔥": "❤\u200d🔥",
		"🤷🏻‍♂️": "🤷\u200d♂", "👨🏾‍💻": "👨\u200d💻", "😀": "😁", "🙂": "😁", "😊": "😁", "😂": "🤣", "✅": "👌",
		"💙": "❤", "🥳": "🎉", "🧑‍💻": "👨\u200d💻",
	} {
		got, err := reactions.Pick(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, e := range reactions.Allowed() {
		got, err := reactions.Pick(e)
		require.NoError(t, err)
		require.Equal(t, e, got, "every emoji of the set is itself")
	}
	for _, in := range []string{"🦀", "🍕", "", "thumbsup", "👍👍"} {
		_, err := reactions.Pick(in)
		require.True(t, core.IsPermanent(err), "%q: %v", in, err)
		require.ErrorContains(t, err, "fixed set", in)
		require.ErrorContains(t, err, "👌", "the error names the set to pick from")
	}
	require.Len(t, reactions.Allowed(), 73)
}

func TestOf(t *testing.T) {
	t.Parallel()
	require.Nil(t, reactions.Of(""), "none: the list left out takes the reaction back")
	r := reactions.Of("👍")
	require.Len(t, r, 1)
	require.Equal(t, models.ReactionTypeTypeEmoji, r[0].Type)
	require.Equal(t, "👍", r[0].ReactionTypeEmoji.Emoji)
}

func TestChanges(t *testing.T) {
	t.Parallel()
	set := func(es ...string) []models.ReactionType {
		var out []models.ReactionType
		for _, e := range es {
			out = append(out, reactions.Of(e)...)
		}
		return out
	}
	custom := models.ReactionType{Type: models.ReactionTypeTypeCustomEmoji,
		ReactionTypeCustomEmoji: &models.ReactionTypeCustomEmoji{CustomEmojiID: "1"}}
	require.Empty(t, reactions.Changes(nil, nil))
	require.Equal(t, []reactions.Change{{Emoji: "👍"}}, reactions.Changes(nil, set("👍")))
	require.Equal(t, []reactions.Change{{Emoji: "👍", Removed: true}, {Emoji: "🔥"}},
		reactions.Changes(set("👍", "❤"), set("❤", "🔥")), "taken back first, then added; ❤ unchanged")
	require.Empty(t, reactions.Changes(set("👍"), append(set("👍"), custom)), "a custom emoji has none")
}
