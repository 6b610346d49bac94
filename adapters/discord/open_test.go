package discord

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// open opens a conversation through the adapter.
func (b *testBundle) open(req core.OpenRequest) (core.OpenedConversation, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.OpenConversation(ctx, req)
}

func TestOpenConversationWithAUserWhoNeverWrote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddUser(grace)

	got, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.NoError(t, err)
	ch := b.srv.DMChannelOf(grace.ID)
	require.NotEmpty(t, ch, "the DM channel was opened")
	require.Equal(t, core.OpenedConversation{ChannelThreadID: ch, ChannelUserID: grace.ID, DisplayName: "grace_h"}, got)

	_, err = b.send(got.ChannelThreadID, "job-1", "good morning, Grace")
	require.NoError(t, err)
	require.Equal(t, []string{"good morning, Grace"}, contents(b.srv.Sent(ch)))

	// Opening again, now with the thread id too, finds the same channel.
	again, err := b.open(core.OpenRequest{ChannelThreadID: ch, ChannelUserID: grace.ID})
	require.NoError(t, err)
	require.Equal(t, got, again)

	// The user's own DMs arrive in that thread.
	b.srv.SendDM(grace, "thanks")
	require.Equal(t, ch, b.core.Wait(t, 1, waitFor)[0].ChannelThreadID)
}

func TestOpenConversationWithAUserWhoWrote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	got, err := b.open(core.OpenRequest{ChannelUserID: ada.ID})
	require.NoError(t, err)
	require.Equal(t, core.OpenedConversation{ChannelThreadID: ch, ChannelUserID: ada.ID, DisplayName: "Ada Lovelace"}, got)
}

func TestOpenConversationWithAnUnknownUser(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorIs(t, err, core.ErrUnreachable)
	require.ErrorContains(t, err, "user "+grace.ID+": discord has no user with this id")
	require.Empty(t, b.srv.DMChannelOf(grace.ID))

	for _, id := range []string{"grace", "-1", "123456789012345678901"} {
		_, err := b.open(core.OpenRequest{ChannelUserID: id})
		require.ErrorIs(t, err, core.ErrUnreachable, id)
		require.ErrorContains(t, err, "is not a discord user id", id)
	}
	require.Equal(t, 1, b.srv.Calls("users.channels"), "bad ids are not sent to Discord")
}

func TestOpenConversationWhenDiscordRefusesTheUser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddUser(grace)
	b.srv.FailNext("users.channels", http.StatusForbidden, 50007, "Cannot send messages to this user")
	b.srv.FailNext("users.channels", http.StatusBadRequest, 50033, "Invalid Recipient(s)")

	_, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorIs(t, err, core.ErrUnreachable)
	require.ErrorContains(t, err, "does not let the bot write to this user")
	_, err = b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorIs(t, err, core.ErrUnreachable)
	require.ErrorContains(t, err, "does not allow a DM with this user")

	// Any other refusal says nothing about the user.
	b.srv.FailNext("users.channels", http.StatusForbidden, 50001, "Missing Access")
	_, err = b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorContains(t, err, "Missing Access")
	require.NotErrorIs(t, err, core.ErrUnreachable)
}

func TestOpenConversationRefusesAnotherThread(t *testing.T) {
	t.Parallel()
	b := setup(t)
	adaCh := b.greet(t, ada)
	b.srv.AddUser(grace)

	_, err := b.open(core.OpenRequest{ChannelThreadID: adaCh, ChannelUserID: grace.ID})
	require.Error(t, err)
	require.NotErrorIs(t, err, core.ErrUnreachable, "the request contradicts itself; the user may be reachable")
	require.ErrorContains(t, err, `channel_thread_id "`+adaCh+`" is not the DM channel with this user (that is `+b.srv.DMChannelOf(grace.ID)+`)`)
	require.ErrorIs(t, err, core.ErrBadAddress)

	_, err = b.open(core.OpenRequest{ChannelThreadID: adaCh})
	require.ErrorContains(t, err, "channel_user_id is required")
	require.ErrorIs(t, err, core.ErrBadAddress)
	require.NotErrorIs(t, err, core.ErrUnreachable)
}

func TestOpenConversationRetriesRateLimitsAndServerErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddUser(grace)
	const retryAfter = 300 * time.Millisecond
	b.srv.FailNext("users.channels", http.StatusInternalServerError, 0, "Internal Server Error")
	b.srv.RateLimitNext("users.channels", retryAfter)
	began := time.Now()

	got, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.NoError(t, err)
	require.Equal(t, b.srv.DMChannelOf(grace.ID), got.ChannelThreadID)
	require.Equal(t, 3, b.srv.Calls("users.channels"))
	require.GreaterOrEqual(t, time.Since(began), retryAfter, "waited for retry_after")
}

func TestOpenConversationRateLimitPastTheDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.sendTimeout = 500 * time.Millisecond })
	b.srv.AddUser(grace)
	b.srv.RateLimitNext("users.channels", time.Minute)

	_, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorContains(t, err, "rate limited for 1m0s, past the deadline")
	require.NotErrorIs(t, err, core.ErrUnreachable)
	require.Equal(t, 1, b.srv.Calls("users.channels"))
}

func TestOpenConversationNeedsARunningAdapter(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	_, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorContains(t, err, "discord adapter is not started")

	b.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Stop(ctx))
	_, err = b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorContains(t, err, "discord adapter is stopped")
	require.NotErrorIs(t, err, core.ErrUnreachable)
}
