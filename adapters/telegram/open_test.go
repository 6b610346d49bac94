package telegram

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// open opens a conversation through the adapter.
func (b *testBundle) open(req core.OpenRequest) (core.OpenedConversation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.OpenConversation(ctx, req)
}

func userID(u telegramtest.User) string { return strconv.FormatInt(u.ID, 10) }

func TestOpenConversationWithAUserWhoStartedTheBot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.StartedBy(ada)

	got, err := b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.NoError(t, err)
	require.Equal(t, core.OpenedConversation{
		ChannelThreadID: userID(ada), // a private chat's id is its user's id
		ChannelUserID:   userID(ada),
		DisplayName:     "Ada Lovelace",
	}, got)

	_, err = b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: got.ChannelThreadID, Text: "Hello Ada"})
	require.NoError(t, err)
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1)
	require.Equal(t, "Hello Ada", sent[0].Text)

	// The thread id alone, or both ids, name the same chat.
	byThread, err := b.open(core.OpenRequest{ChannelThreadID: userID(ada)})
	require.NoError(t, err)
	require.Equal(t, got, byThread)
	both, err := b.open(core.OpenRequest{ChannelThreadID: userID(ada), ChannelUserID: userID(ada)})
	require.NoError(t, err)
	require.Equal(t, got, both)
}

func TestOpenConversationWithAUserWhoWrote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, grace)

	got, err := b.open(core.OpenRequest{ChannelUserID: userID(grace)})
	require.NoError(t, err)
	require.Equal(t, userID(grace), got.ChannelThreadID)
	require.Equal(t, "grace_h", got.DisplayName, "the username when there is no name")
	require.Equal(t, b.core.Messages()[0].ChannelThreadID, got.ChannelThreadID, "the thread inbound DMs arrive in")
}

func TestOpenConversationWithAUserWhoNeverStartedTheBot(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.ErrorIs(t, err, core.ErrUnreachable)
	require.ErrorContains(t, err, "user 100001")
	require.ErrorContains(t, err, "must open it in Telegram and press Start")
	require.Equal(t, 1, b.srv.Calls("getChat"))
	require.Zero(t, b.srv.Calls("sendMessage"), "opening sends nothing")
}

func TestOpenConversationWithAUserWhoBlockedTheBot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.StartedBy(ada)
	b.srv.Block(ada.ID)

	_, err := b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.ErrorIs(t, err, core.ErrUnreachable)
	require.ErrorContains(t, err, "Forbidden: bot was blocked by the user")
	require.ErrorContains(t, err, "unblock it")

	b.srv.Unblock(ada.ID)
	_, err = b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.NoError(t, err)
}

func TestOpenConversationRefusesBadIDs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.StartedBy(ada)
	b.srv.AddChat(-4001) // a group the bot is in

	_, err := b.open(core.OpenRequest{ChannelThreadID: userID(ada), ChannelUserID: userID(grace)})
	require.Error(t, err)
	require.NotErrorIs(t, err, core.ErrUnreachable, "a mismatch is the caller's mistake, not the user's state")
	require.ErrorContains(t, err, `channel_thread_id "100001" is not the private chat of user "100002"`)
	require.ErrorIs(t, err, core.ErrBadAddress)

	for _, id := range []string{"-4001", "0", "ada", "1e5"} {
		_, err := b.open(core.OpenRequest{ChannelUserID: id})
		require.ErrorIs(t, err, core.ErrUnreachable, id)
		require.ErrorContains(t, err, "is not a telegram user id", id)
	}

	_, err = b.open(core.OpenRequest{})
	require.ErrorContains(t, err, "no channel_user_id or channel_thread_id")
	require.Zero(t, b.srv.Calls("getChat"), "nothing was asked of Telegram")
}

func TestOpenConversationRetriesRateLimitsAndServerErrors(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
	b := newBundle(t)
	b.adapter.clock = clock
	b.start(t)
	b.srv.StartedBy(ada)
	b.srv.FailNext("getChat", telegramtest.ServerError())
	b.srv.FailNext("getChat", telegramtest.TooManyRequests(3))

	type result struct {
		got core.OpenedConversation
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := b.open(core.OpenRequest{ChannelUserID: userID(ada)})
		done <- result{got, err}
	}()
	// The 5xx backoff and then retry_after run on the adapter's clock.
	clock.WaitForTimer(t, clock.Now().Add(time.Millisecond), waitFor)
	clock.Advance(time.Millisecond)
	clock.WaitForTimer(t, clock.Now().Add(3*time.Second), waitFor)
	require.Equal(t, 2, b.srv.Calls("getChat"))
	clock.Advance(3 * time.Second)

	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, userID(ada), r.got.ChannelThreadID)
	case <-time.After(waitFor):
		t.Fatal("OpenConversation did not return after retry_after")
	}
	require.Equal(t, 3, b.srv.Calls("getChat"))
}

func TestOpenConversationGivesUpOnPersistentServerErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.StartedBy(ada)
	for range b.adapter.maxServerRetries + 1 {
		b.srv.FailNext("getChat", telegramtest.ServerError())
	}

	_, err := b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.ErrorContains(t, err, "failed after 3 retries")
	require.NotErrorIs(t, err, core.ErrUnreachable, "telegram failing says nothing about the user")
}

func TestOpenConversationNeedsARunningAdapter(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	_, err := b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.ErrorContains(t, err, "telegram adapter is not started")

	b.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Stop(ctx))
	_, err = b.open(core.OpenRequest{ChannelUserID: userID(ada)})
	require.ErrorContains(t, err, "telegram adapter is stopped")
	require.False(t, errors.Is(err, core.ErrUnreachable))
}
