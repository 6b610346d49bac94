package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// testRoutedMessageIdempotencyAndFirstRecord: a routed message to a
// conversation the API opened starts its first session record; a repeated
// idempotency key returns the job while it is fresh, and is taken over
// once it is not.
func testRoutedMessageIdempotencyAndFirstRecord(t *testing.T, open Opener) {
	b := setup(t, open)
	conv, err := b.st.EnsureConversation(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "55",
		ChannelUserID: "55", DisplayName: "Nina", TimeZone: "Europe/Berlin", Now: b.t0})
	require.NoError(t, err)
	require.Nil(t, conv.CurrentRecordID)
	again, err := b.st.EnsureConversation(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "55", Now: b.t0})
	require.NoError(t, err)
	require.Equal(t, conv.ID, again.ID, "found, not created twice")
	require.Equal(t, "Nina", again.DisplayName, "an empty name changes nothing")

	j := &core.Job{ConversationID: conv.ID, Text: "welcome", DueAt: b.t0, Origin: "system", Format: core.FormatRichText,
		IdempotencyKey: "k1", CreatedAt: b.t0}
	created, err := b.st.RouteMessage(b.ctx, j, 10, b.t0.Add(-24*time.Hour))
	require.NoError(t, err)
	require.True(t, created)
	dup := &core.Job{ConversationID: conv.ID, Text: "other", DueAt: b.t0, IdempotencyKey: "k1", CreatedAt: b.at(time.Hour)}
	created, err = b.st.RouteMessage(b.ctx, dup, 10, b.at(time.Hour).Add(-24*time.Hour))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, j.ID, dup.ID)
	require.Equal(t, "welcome", dup.Text, "the job first made with the key")
	found, err := b.st.JobByIdempotencyKey(b.ctx, "k1", b.t0.Add(-time.Hour))
	require.NoError(t, err)
	require.Equal(t, j.ID, found.ID)
	require.Equal(t, core.FormatRichText, found.Format)

	claimed, err := b.st.ClaimDueJobs(b.ctx, "w1", b.t0, b.at(time.Minute), []core.JobKind{core.JobMessage}, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	msg := &core.Message{Role: core.RoleAssistant, Content: "welcome", Source: core.SourceAPI, CreatedAt: b.t0}
	ok, err := b.st.CompleteMessageJob(b.ctx, j.ID, "w1", msg)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, msg.SessionRecordID, "the first message starts a record")
	conv, err = b.st.Conversation(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, *msg.SessionRecordID, *conv.CurrentRecordID)

	// A day later the key names a new message.
	late := b.at(25 * time.Hour)
	fresh := &core.Job{ConversationID: conv.ID, Text: "again", DueAt: late, IdempotencyKey: "k1", CreatedAt: late}
	created, err = b.st.RouteMessage(b.ctx, fresh, 10, late.Add(-24*time.Hour))
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, j.ID, fresh.ID)
	old, err := b.st.Job(b.ctx, j.ID)
	require.NoError(t, err)
	require.Empty(t, old.IdempotencyKey, "the old job let the key go")

	// The cap on waiting messages.
	for range 9 {
		require.NoError(t, func() error {
			_, err := b.st.RouteMessage(b.ctx, &core.Job{ConversationID: conv.ID, Text: "x", DueAt: late}, 10, late)
			return err
		}())
	}
	_, err = b.st.RouteMessage(b.ctx, &core.Job{ConversationID: conv.ID, Text: "x", DueAt: late}, 10, late)
	require.ErrorIs(t, err, core.ErrTooManyPending)
}
