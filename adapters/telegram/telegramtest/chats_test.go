package telegramtest_test

import (
	"context"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

func TestGetChat(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	bob := telegramtest.User{ID: 1002, FirstName: "Bob", LastName: "Builder"}

	// Nobody has started the bot yet.
	_, err := b.GetChat(ctx, &bot.GetChatParams{ChatID: tb.alice.ID})
	require.ErrorIs(t, err, bot.ErrorBadRequest)
	require.ErrorContains(t, err, "Bad Request: chat not found")

	// A user who wrote, and one who only pressed Start, are found.
	tb.srv.SendPrivate(tb.alice, "hi")
	tb.srv.StartedBy(bob)
	chat, err := b.GetChat(ctx, &bot.GetChatParams{ChatID: tb.alice.ID})
	require.NoError(t, err)
	require.Equal(t, tb.alice.ID, chat.ID)
	require.Equal(t, models.ChatTypePrivate, chat.Type)
	require.Equal(t, "Alice", chat.FirstName)
	require.Equal(t, "alice", chat.Username)
	chat, err = b.GetChat(ctx, &bot.GetChatParams{ChatID: bob.ID})
	require.NoError(t, err)
	require.Equal(t, "Builder", chat.LastName)
	require.Equal(t, 1, tb.srv.Pending(), "only Alice's message waits: StartedBy queues no update")

	// The bot may now write to Bob first.
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: bob.ID, Text: "hello Bob"})
	require.NoError(t, err)
	require.Len(t, tb.srv.Sent(bob.ID), 1)

	tb.srv.Block(bob.ID)
	_, err = b.GetChat(ctx, &bot.GetChatParams{ChatID: bob.ID})
	require.ErrorIs(t, err, bot.ErrorForbidden)
	require.ErrorContains(t, err, "Forbidden: bot was blocked by the user")

	tb.srv.FailNext("getChat", telegramtest.TooManyRequests(3))
	_, err = b.GetChat(ctx, &bot.GetChatParams{ChatID: tb.alice.ID})
	var tooMany *bot.TooManyRequestsError
	require.ErrorAs(t, err, &tooMany)
	require.Equal(t, 3, tooMany.RetryAfter)
	require.Equal(t, 5, tb.srv.Calls("getChat"))
}

func TestRevokedTokenIsRefusedUntilRestored(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	ctx := context.Background()
	tb.srv.SendPrivate(tb.alice, "hi")

	tb.srv.RevokeToken()
	_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "refused"})
	require.ErrorIs(t, err, bot.ErrorUnauthorized)
	_, err = b.GetMe(ctx)
	require.ErrorIs(t, err, bot.ErrorUnauthorized)
	require.Empty(t, tb.srv.Sent(tb.alice.ID))

	tb.srv.RestoreToken()
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "delivered"})
	require.NoError(t, err)
	require.Len(t, tb.srv.Sent(tb.alice.ID), 1)
}

// A held answer: the message is sent at once, the client hears only once
// released; a client that gives up never hears.
func TestHeldAnswerActsFirst(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	tb.srv.HoldAnswers("sendMessage")
	done := make(chan error, 1)
	go func() {
		_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "held"})
		done <- err
	}()
	tb.srv.WaitHeld(t, "sendMessage", 1, wait)
	require.Len(t, tb.srv.Sent(tb.alice.ID), 1, "sent before the answer")
	select {
	case err := <-done:
		t.Fatalf("answered while held: %v", err)
	default:
	}
	tb.srv.ReleaseAnswers("sendMessage")
	require.NoError(t, <-done)

	tb.srv.HoldAnswers("sendMessage")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "never heard"})
		done <- err
	}()
	tb.srv.WaitHeld(t, "sendMessage", 2, wait)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Len(t, tb.srv.Sent(tb.alice.ID), 2, "it was sent all the same")
	tb.srv.ReleaseAnswers("sendMessage")
}
