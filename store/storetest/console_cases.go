package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// testConversationsByActivity: the console's list puts the conversation
// that heard from anyone last first, whoever spoke (an outbound message
// counts), and pages through that order.
func testConversationsByActivity(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inbound(t, "first", "hi", b.at(time.Minute), false).Conversation.ID
	second := b.inbound(t, "second", "hi", b.at(2*time.Minute), false).Conversation.ID
	third := b.inbound(t, "third", "hi", b.at(3*time.Minute), false).Conversation.ID

	// A scheduled send to the first makes it the most recent.
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: first, Role: core.RoleAssistant,
		Source: core.SourceScheduledSend, Content: "reminder", CreatedAt: b.at(4 * time.Minute)}))

	all, err := b.st.ConversationsByActivity(b.ctx, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []int64{first, third, second}, convIDs(all))
	require.Equal(t, b.at(4*time.Minute), *all[0].LastMessageAt)

	page, err := b.st.ConversationsByActivity(b.ctx, 1, 1)
	require.NoError(t, err)
	require.Equal(t, []int64{third}, convIDs(page))

	rest, err := b.st.ConversationsByActivity(b.ctx, 10, 3)
	require.NoError(t, err)
	require.Empty(t, rest)
}

func convIDs(cs []core.Conversation) []int64 {
	out := make([]int64, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// testConsoleSessionsRevoked: a logged-out console session is refused
// until its cookie would have expired; revoking twice is no error, other
// sessions are untouched, and rows past their expiry go when the next
// session is revoked.
func testConsoleSessionsRevoked(t *testing.T, open Opener) {
	b := setup(t, open)
	revoked, err := b.st.ConsoleSessionRevoked(b.ctx, "session-a")
	require.NoError(t, err)
	require.False(t, revoked)

	require.NoError(t, b.st.RevokeConsoleSession(b.ctx, "session-a", b.at(time.Hour), b.t0))
	require.NoError(t, b.st.RevokeConsoleSession(b.ctx, "session-a", b.at(time.Hour), b.t0), "twice is no error")
	for id, want := range map[string]bool{"session-a": true, "session-b": false} {
		revoked, err := b.st.ConsoleSessionRevoked(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, revoked, id)
	}

	// Two hours on, session-a's cookie has expired: revoking another
	// deletes its row.
	require.NoError(t, b.st.RevokeConsoleSession(b.ctx, "session-b", b.at(3*time.Hour), b.at(2*time.Hour)))
	revoked, err = b.st.ConsoleSessionRevoked(b.ctx, "session-a")
	require.NoError(t, err)
	require.False(t, revoked, "a row past its expiry is gone")
	revoked, err = b.st.ConsoleSessionRevoked(b.ctx, "session-b")
	require.NoError(t, err)
	require.True(t, revoked)
}
