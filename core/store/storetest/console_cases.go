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
