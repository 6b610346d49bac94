package storetest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// testRedeliveryStoredOnce: a platform delivering one user message twice
// (a retried webhook, to this replica or another, at the same moment) has
// it stored, and its turn planned, once.
func testRedeliveryStoredOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	in := func(thread, id string) error {
		_, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: slack, ChannelThreadID: thread,
			Text: "hi", PlatformMessageID: id, Now: b.t0, PlanRun: true})
		return err
	}
	require.NoError(t, in("D1", "1700000000.000100"))
	require.ErrorIs(t, in("D1", "1700000000.000100"), core.ErrDuplicateInbound)
	require.NoError(t, in("D2", "1700000000.000100"), "another conversation's message with the same id")
	require.NoError(t, in("D1", ""), "no id: nothing to compare")
	require.NoError(t, in("D1", ""))

	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	for i := range racers {
		wg.Go(func() { errs[i] = in("D3", "1700000000.000200") })
	}
	wg.Wait()
	stored := 0
	for _, err := range errs {
		if err == nil {
			stored++
		} else {
			require.ErrorIs(t, err, core.ErrDuplicateInbound)
		}
	}
	require.Equal(t, 1, stored, "one of the simultaneous deliveries is stored")
	conv, err := b.st.ConversationByThread(b.ctx, slack, "D3")
	require.NoError(t, err)
	require.EqualValues(t, 1, b.count(t, "messages", "conversation_id = ?", conv.ID))
	require.Equal(t, int64(1), conv.LastSeq, "a refused delivery takes no seq")
	require.EqualValues(t, 1, b.count(t, "runs", "conversation_id = ?", conv.ID))
}

// testRepliesWithNULAreKept: a reply with a NUL or invalid UTF-8 (a model
// may write either) is stored, with U+FFFD in their place on PostgreSQL.
func testRepliesWithNULAreKept(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.inbound(t, "chat-1", "hi", b.t0, false).Conversation
	m := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Source: core.SourceReply, Content: "a\x00b\xffc", CreatedAt: b.t0}
	require.NoError(t, b.st.AppendMessage(b.ctx, m))
	msgs, err := b.st.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Contains(t, []string{"a\x00b\xffc", "a\uFFFDb\uFFFDc"}, msgs[1].Content)
}
