package slack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// open opens a conversation through the adapter.
func (b *testBundle) open(req core.OpenRequest) (core.OpenedConversation, error) {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	return b.adapter.OpenConversation(ctx, req)
}

func TestOpenConversationWithAUserWhoNeverWrote(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.srv.AddUser(grace)

	got, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.NoError(t, err)
	ch := b.srv.DMChannelOf(grace.ID)
	require.True(t, strings.HasPrefix(ch, "D"), "conversations.open opened the DM: %q", ch)
	require.Equal(t, core.OpenedConversation{ChannelThreadID: ch, ChannelUserID: grace.ID, DisplayName: "Grace Hopper"}, got)

	_, err = b.send(got.ChannelThreadID, "good morning, Grace")
	require.NoError(t, err)
	require.Equal(t, []string{"good morning, Grace"}, texts(b.srv.Sent(ch)))

	// Opening again, now with the thread id too, finds the same DM.
	again, err := b.open(core.OpenRequest{ChannelThreadID: ch, ChannelUserID: grace.ID})
	require.NoError(t, err)
	require.Equal(t, got, again)
	require.Equal(t, 1, b.srv.Calls("users.info"), "the name is cached")

	// The user's own DMs arrive in that thread.
	b.srv.SendDM(grace, "thanks")
	require.Equal(t, ch, b.core.Wait(t, 1, waitFor)[0].ChannelThreadID)
}

func TestOpenConversationWithAUserWhoWrote(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	got, err := b.open(core.OpenRequest{ChannelUserID: ada.ID})
	require.NoError(t, err)
	require.Equal(t, core.OpenedConversation{ChannelThreadID: ch, ChannelUserID: ada.ID, DisplayName: "ada.l"}, got)
}

func TestOpenConversationWithUnreachableUsers(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.srv.AddUser(grace)
	b.srv.Block(grace.ID) // deactivated

	for _, tc := range []struct{ user, want string }{
		{"U0NOBODY01", "slack has no user with this id in the workspace"},
		{grace.ID, "the user's account is deactivated"},
		{b.srv.BotUserID(), "the user is a bot"},
	} {
		_, err := b.open(core.OpenRequest{ChannelUserID: tc.user})
		require.ErrorIs(t, err, core.ErrUnreachable, tc.user)
		require.ErrorContains(t, err, "opening slack conversation with user "+tc.user+": "+tc.want)
	}
	require.Empty(t, b.srv.DMChannelOf(grace.ID))

	b.srv.AddUser(ada)
	b.srv.FailNext("conversations.open", "user_not_visible")
	_, err := b.open(core.OpenRequest{ChannelUserID: ada.ID})
	require.ErrorIs(t, err, core.ErrUnreachable)
	require.ErrorContains(t, err, "not allowed to see this user")

	// A failure that is not about the user.
	b.srv.FailNext("conversations.open", "missing_scope")
	_, err = b.open(core.OpenRequest{ChannelUserID: ada.ID})
	require.ErrorContains(t, err, "missing_scope")
	require.NotErrorIs(t, err, core.ErrUnreachable)
}

func TestOpenConversationRefusesBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	adaDM := b.greet(t, ada)
	b.srv.AddUser(grace)

	_, err := b.open(core.OpenRequest{ChannelThreadID: adaDM, ChannelUserID: grace.ID})
	require.Error(t, err)
	require.NotErrorIs(t, err, core.ErrUnreachable, "the request contradicts itself; the user may be reachable")
	require.ErrorContains(t, err, `channel_thread_id "`+adaDM+`" is not the DM with this user (that is `+b.srv.DMChannelOf(grace.ID)+`)`)
	require.ErrorIs(t, err, core.ErrBadAddress)

	_, err = b.open(core.OpenRequest{ChannelThreadID: adaDM})
	require.ErrorContains(t, err, "channel_user_id is required")
	require.ErrorIs(t, err, core.ErrBadAddress)
	require.NotErrorIs(t, err, core.ErrUnreachable)

	calls := b.srv.Calls("conversations.open")
	for _, id := range []string{adaDM, "C0GENERAL1", "u0ada00001", "bad id"} {
		_, err := b.open(core.OpenRequest{ChannelUserID: id})
		require.ErrorIs(t, err, core.ErrUnreachable, id)
		require.ErrorContains(t, err, "is not a slack user id", id)
	}
	require.Equal(t, calls, b.srv.Calls("conversations.open"), "bad ids are not sent to Slack")
}

func TestOpenConversationWaitsOutARateLimit(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
	b := newBundle(t, ModeEvents)
	b.adapter.clock = clock
	b.start(t)
	b.srv.AddUser(grace)
	b.srv.RateLimitNext("conversations.open", 2*time.Second)

	type result struct {
		got core.OpenedConversation
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
		done <- result{got, err}
	}()
	clock.WaitForTimer(t, clock.Now().Add(2*time.Second), waitFor)
	require.Empty(t, b.srv.DMChannelOf(grace.ID), "opened before Retry-After passed")
	clock.Advance(2 * time.Second)

	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Equal(t, b.srv.DMChannelOf(grace.ID), r.got.ChannelThreadID)
	case <-time.After(waitFor):
		t.Fatal("OpenConversation did not return after Retry-After")
	}
	require.Equal(t, 2, b.srv.Calls("conversations.open"))
}

func TestOpenConversationNeedsARunningAdapter(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket)
	_, err := b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorContains(t, err, "slack adapter is not started")

	b.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Stop(ctx))
	_, err = b.open(core.OpenRequest{ChannelUserID: grace.ID})
	require.ErrorContains(t, err, "slack adapter is stopped")
	require.NotErrorIs(t, err, core.ErrUnreachable)
}
