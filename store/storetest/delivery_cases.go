package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// testDeliveryStates: a reply stored as sending before its send is found
// by the conversation's next run (not its own), settled by SettleDelivery
// or by its run's completion (not stored twice), and a dead run that left
// one queues a turn to send it again.
func testDeliveryStates(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "d1", "w1", b.t0)
	reply := core.Message{ConversationID: run.ConversationID, Role: core.RoleAssistant, Content: "hello",
		Source: core.SourceReply, RunID: &run.ID, Delivery: core.DeliverySending, CreatedAt: b.at(time.Second)}
	require.NoError(t, b.st.AppendMessage(b.ctx, &reply))

	own, err := b.st.PendingDeliveries(b.ctx, run.ConversationID, run.ID)
	require.NoError(t, err)
	require.Empty(t, own, "a run's own sends are not pending to it")
	other, err := b.st.PendingDeliveries(b.ctx, run.ConversationID, run.ID+1000)
	require.NoError(t, err)
	require.Len(t, other, 1)
	require.Equal(t, reply.ID, other[0].ID)
	require.Equal(t, core.DeliverySending, other[0].Delivery)

	// The completion settles it in place.
	reply.Delivery, reply.PlatformMessageID = core.DeliverySent, "p-1"
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{Status: core.RunSucceeded,
		Messages: []*core.Message{&reply}, Now: b.at(2 * time.Second)}))
	msgs, err := b.st.Messages(b.ctx, run.ConversationID)
	require.NoError(t, err)
	require.Len(t, msgs, 2, "the user's message and the reply, once")
	require.Equal(t, core.DeliverySent, msgs[1].Delivery)
	require.Equal(t, "p-1", msgs[1].PlatformMessageID)
	pending, err := b.st.PendingDeliveries(b.ctx, run.ConversationID, 0)
	require.NoError(t, err)
	require.Empty(t, pending)

	// A run that died with a reply sending: the reaper queues a turn.
	dead := b.claimed(t, "d2", "gone", b.t0)
	left := core.Message{ConversationID: dead.ConversationID, Role: core.RoleAssistant, Content: "bye",
		Source: core.SourceReply, RunID: &dead.ID, Delivery: core.DeliverySending, CreatedAt: b.at(time.Second)}
	require.NoError(t, b.st.AppendMessage(b.ctx, &left))
	reaped, retried, err := b.st.ReapRunsOf(b.ctx, b.at(time.Minute), "gone")
	require.NoError(t, err)
	require.Equal(t, 1, reaped)
	require.Equal(t, 1, retried)
	runs, err := b.st.Runs(b.ctx, dead.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, core.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "stale")
	require.Equal(t, core.RunQueued, runs[1].Status)
	require.Equal(t, dead.TriggerMessageID, runs[1].TriggerMessageID)

	left.Delivery = core.DeliveryFailed
	left.Metadata = map[string]any{"undelivered": "refused"}
	require.NoError(t, b.st.SettleDelivery(b.ctx, left))
	msgs, err = b.st.Messages(b.ctx, dead.ConversationID)
	require.NoError(t, err)
	require.Equal(t, core.DeliveryFailed, msgs[1].Delivery)
	require.Equal(t, "refused", msgs[1].Metadata["undelivered"])

	owners, err := b.st.RunningOwners(b.ctx)
	require.NoError(t, err)
	require.Empty(t, owners)
}
