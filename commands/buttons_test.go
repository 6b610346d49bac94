package commands_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// The commands' buttons: a cancel per reminder listed (the first eight),
// a confirmation for /forget all; a tap's data is checked against the
// tapper's conversation, never trusted.
func TestCommandButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	var ids []int64
	for i := range 9 {
		j := &core.Job{ConversationID: b.conv.ID, Kind: core.JobMessage, Status: core.JobPending, Text: "drink water",
			DueAt: t0.Add(time.Duration(i+1) * time.Hour), CreatedAt: t0}
		require.NoError(t, b.st.CreateJob(b.ctx, j))
		ids = append(ids, j.ID)
	}
	r, err := b.h.Reply(b.ctx, b.conv, "/reminders")
	require.NoError(t, err)
	require.Len(t, r.Choices, 8, "a button for each of the first eight; the ninth by /cancel 9")
	require.Equal(t, core.Choice{Label: "Cancel 2", Data: "cx" + itoa(ids[1])}, r.Choices[1])
	require.False(t, r.OneAnswer, "each cancel button works on its own")

	tap, err := b.h.TapCommand(b.ctx, b.conv, r.Choices[1].Data)
	require.NoError(t, err)
	require.Equal(t, "Cancelled.", tap.Notice)
	require.Equal(t, "Cancelled “drink water”, which was due Mon 23 Nov 2026, 11:00.", tap.Reply.Text)
	j, err := b.st.Job(b.ctx, ids[1])
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, j.Status)
	require.EqualValues(t, 1, b.changed.Load(), "the scheduler is woken")
	tap, err = b.h.TapCommand(b.ctx, b.conv, r.Choices[1].Data)
	require.NoError(t, err)
	require.Equal(t, core.CommandTap{Notice: "Can't cancel: it was already cancelled."}, tap)

	// Another user's job, and data no button has.
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "43", ChannelUserID: "43", Text: "hi", Now: t0})
	require.NoError(t, err)
	other := &core.Job{ConversationID: res.Conversation.ID, Kind: core.JobMessage, Status: core.JobPending, Text: "theirs", DueAt: t0.Add(time.Hour), CreatedAt: t0}
	require.NoError(t, b.st.CreateJob(b.ctx, other))
	for _, data := range []string{"cx" + itoa(other.ID), "cx", "cx0", "cx-1", "cx01", "cxabc", "cf", "cf.maybe", "c", "cx" + itoa(ids[0]) + " "} {
		tap, err := b.h.TapCommand(b.ctx, b.conv, data)
		require.NoError(t, err, data)
		require.Equal(t, core.CommandTap{Notice: core.NoticeStaleButton}, tap, data)
	}
	theirs, err := b.st.Job(b.ctx, other.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, theirs.Status, "another user's reminder is untouched")

	_, _, err = b.facts.Remember(b.ctx, b.conv.ID, "lives in Lyon", 30, t0)
	require.NoError(t, err)
	r, err = b.h.Reply(b.ctx, b.conv, "/forget all")
	require.NoError(t, err)
	require.True(t, r.OneAnswer)
	require.Equal(t, []core.Choice{{Label: "Erase all", Data: "cf.yes"}, {Label: "Keep", Data: "cf.no"}}, r.Choices)
	tap, err = b.h.TapCommand(b.ctx, b.conv, "cf.no")
	require.NoError(t, err)
	require.Equal(t, "Kept: I haven't erased anything.", tap.Reply.Text)
	facts, err := b.facts.Facts(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Len(t, facts, 1)
	tap, err = b.h.TapCommand(b.ctx, b.conv, "cf.yes")
	require.NoError(t, err)
	require.Equal(t, "Done: I've forgotten the 1 thing I remembered about you.", tap.Reply.Text)
	facts, err = b.facts.Facts(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Empty(t, facts)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
