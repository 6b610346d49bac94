package telegram

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

func TestReactSetsTheBotsReactionMapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	msg := b.core.Messages()[0]
	mid, err := strconv.Atoi(msg.PlatformMessageID)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	chat := strconv.FormatInt(ada.ID, 10)

	require.NoError(t, b.adapter.React(ctx, chat, msg.PlatformMessageID, "👍"))
	require.Equal(t, "👍", b.srv.BotReaction(ada.ID, mid))
	require.NoError(t, b.adapter.React(ctx, chat, msg.PlatformMessageID, "❤️"), "VS16 is dropped: Telegram's ❤ has none")
	require.Equal(t, "❤", b.srv.BotReaction(ada.ID, mid), "one reaction a message: the new one replaces it")
	require.NoError(t, b.adapter.React(ctx, chat, msg.PlatformMessageID, "😊"))
	require.Equal(t, "😁", b.srv.BotReaction(ada.ID, mid), "a close variant takes the set's emoji")

	err = b.adapter.React(ctx, chat, msg.PlatformMessageID, "🦀")
	require.Contains(t, permanentReason(t, err), `telegram cannot react with "🦀"`)
	require.Contains(t, permanentReason(t, err), "fixed set")
	require.Equal(t, 3, b.srv.Calls("setMessageReaction"), "refused before any call")
	require.Equal(t, "😁", b.srv.BotReaction(ada.ID, mid))

	require.NoError(t, b.adapter.Unreact(ctx, chat, msg.PlatformMessageID, "😊"))
	require.Empty(t, b.srv.BotReaction(ada.ID, mid))
	require.NoError(t, b.adapter.Unreact(ctx, chat, msg.PlatformMessageID, "😊"), "none there: no error")
	require.NoError(t, b.adapter.Unreact(ctx, chat, "4242", "👍"), "a message gone has no reaction")

	// The acknowledgement, then the model's own reaction, which replaces
	// it: taking the acknowledgement back leaves the model's.
	require.NoError(t, b.adapter.React(ctx, chat, msg.PlatformMessageID, "👀"))
	require.NoError(t, b.adapter.React(ctx, chat, msg.PlatformMessageID, "👍"))
	require.NoError(t, b.adapter.Unreact(ctx, chat, msg.PlatformMessageID, "👀"))
	require.Equal(t, "👍", b.srv.BotReaction(ada.ID, mid), "the model's reaction stays")
	require.NoError(t, b.adapter.Unreact(ctx, chat, msg.PlatformMessageID, "👍"))
	require.Empty(t, b.srv.BotReaction(ada.ID, mid))

	err = b.adapter.React(ctx, chat, "4242", "👍")
	require.Contains(t, permanentReason(t, err), "telegram rejected the request")
	require.ErrorContains(t, err, "message to react not found")
	err = b.adapter.React(ctx, chat, "not-an-id", "👍")
	require.Contains(t, permanentReason(t, err), "not a telegram message id")
}

func TestReactRetriesAfter429(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	msg := b.core.Messages()[0]
	mid, _ := strconv.Atoi(msg.PlatformMessageID)
	b.srv.FailNext("setMessageReaction", telegramtest.TooManyRequests(1))
	b.srv.FailNext("setMessageReaction", telegramtest.ServerError())
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.React(ctx, strconv.FormatInt(ada.ID, 10), msg.PlatformMessageID, "🎉"))
	require.Equal(t, "🎉", b.srv.BotReaction(ada.ID, mid))
	require.Equal(t, 3, b.srv.Calls("setMessageReaction"), "a 429, then a 500, then the reaction")

	b.srv.Block(ada.ID)
	err := b.adapter.React(ctx, strconv.FormatInt(ada.ID, 10), msg.PlatformMessageID, "👍")
	require.Contains(t, permanentReason(t, err), "blocked the bot")
}
