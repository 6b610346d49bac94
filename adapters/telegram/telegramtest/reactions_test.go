package telegramtest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// emojiReaction is the reaction list of one emoji.
func emojiReaction(e string) []models.ReactionType {
	return []models.ReactionType{{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Emoji: e}}}
}

func TestBotReactionSetAndTakenBack(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	mid := tb.srv.SendPrivate(tb.alice, "hello").Message.ID
	set := func(reaction []models.ReactionType) error {
		_, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: tb.alice.ID, MessageID: mid, Reaction: reaction})
		return err
	}

	require.NoError(t, set(emojiReaction("👍")))
	require.Equal(t, "👍", tb.srv.BotReaction(tb.alice.ID, mid))
	require.NoError(t, set(emojiReaction("❤\u200d🔥")), "a ZWJ sequence of the set")
	tb.srv.WaitBotReaction(t, tb.alice.ID, mid, "❤\u200d🔥", wait)
	require.NoError(t, set(nil), "no list (go-telegram/bot leaves an empty one out): the reaction is taken back")
	require.Empty(t, tb.srv.BotReaction(tb.alice.ID, mid))
	require.NoError(t, set(nil), "taking back none is no error")

	// The bot's own messages take reactions too.
	sent, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "hi"})
	require.NoError(t, err)
	_, err = b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: tb.alice.ID, MessageID: sent.ID, Reaction: emojiReaction("🎉")})
	require.NoError(t, err)
	require.Equal(t, "🎉", tb.srv.BotReaction(tb.alice.ID, sent.ID))
	require.Equal(t, 5, tb.srv.Calls("setMessageReaction"))
}

func TestBotReactionRefusedAsTelegramDoes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	mid := tb.srv.SendPrivate(tb.alice, "hello").Message.ID
	react := func(chatID int64, id int, reaction []models.ReactionType) error {
		_, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: chatID, MessageID: id, Reaction: reaction})
		return err
	}

	for _, e := range []string{"😀", "❤️", "👍🏽", "✅"} {
		err := react(tb.alice.ID, mid, emojiReaction(e))
		require.ErrorIs(t, err, bot.ErrorBadRequest, e)
		require.ErrorContains(t, err, "REACTION_INVALID", "%q is outside the set: the bot maps it first", e)
	}
	two := append(emojiReaction("👍"), emojiReaction("🔥")...)
	require.ErrorContains(t, react(tb.alice.ID, mid, two), "REACTIONS_TOO_MANY", "a bot has one reaction")
	custom := []models.ReactionType{{Type: models.ReactionTypeTypeCustomEmoji,
		ReactionTypeCustomEmoji: &models.ReactionTypeCustomEmoji{CustomEmojiID: "5368324170671202286"}}}
	require.ErrorContains(t, react(tb.alice.ID, mid, custom), "REACTION_INVALID")
	require.ErrorContains(t, react(tb.alice.ID, mid+7, emojiReaction("👍")), "message to react not found")
	require.ErrorContains(t, react(tb.alice.ID, 0, emojiReaction("👍")), "message to react not found")
	require.ErrorContains(t, react(4242, 1, emojiReaction("👍")), "chat not found")
	require.Empty(t, tb.srv.BotReaction(tb.alice.ID, mid), "nothing refused was set")

	tb.srv.FailNext("setMessageReaction", telegramtest.TooManyRequests(2))
	err := react(tb.alice.ID, mid, emojiReaction("👍"))
	var tooMany *bot.TooManyRequestsError
	require.True(t, errors.As(err, &tooMany), "%v", err)
	require.Equal(t, 2, tooMany.RetryAfter)
	require.Empty(t, tb.srv.BotReaction(tb.alice.ID, mid))
	require.NoError(t, react(tb.alice.ID, mid, emojiReaction("👍")))

	tb.srv.Block(tb.alice.ID)
	require.ErrorIs(t, react(tb.alice.ID, mid, emojiReaction("🔥")), bot.ErrorForbidden)
	require.Equal(t, "👍", tb.srv.BotReaction(tb.alice.ID, mid))
}
