package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// command records a chat command on thread (stored, no run planned) and
// appends its answer, as the dispatcher does.
func (b *testBundle) command(t *testing.T, thread, text, answer string, now time.Time) (core.Message, core.Message) {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: telegram, ChannelThreadID: thread, ChannelUserID: "user-" + thread,
		Text: text, Source: core.SourceCommand, Now: now,
	})
	require.NoError(t, err)
	require.Nil(t, res.Run, "a command plans no run")
	reply := &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleAssistant, Content: answer,
		Source: core.SourceCommand, CreatedAt: now}
	require.NoError(t, b.st.AppendMessage(b.ctx, reply))
	return res.Message, *reply
}

func testEndSessionRecord(t *testing.T, open Opener) {
	b := setup(t, open)
	const gap = 10 * time.Minute
	first := b.inboundGap(t, "chat", "hi", b.t0, gap)
	rec1 := *first.Conversation.CurrentRecordID

	ended, err := b.st.EndSessionRecord(b.ctx, first.Conversation.ID, b.at(time.Minute))
	require.NoError(t, err)
	require.Equal(t, rec1, *ended)
	old, err := b.st.SessionRecord(b.ctx, rec1)
	require.NoError(t, err)
	require.NotNil(t, old.EndedAt)
	require.True(t, old.EndedAt.Equal(b.at(time.Minute)), "ended when asked, got %v", old.EndedAt)
	conv, err := b.st.Conversation(b.ctx, first.Conversation.ID)
	require.NoError(t, err)
	require.Nil(t, conv.CurrentRecordID)

	// The answer to /new still belongs to the record it ended.
	answer := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Content: "fresh start",
		Source: core.SourceCommand, SessionRecordID: &rec1, CreatedAt: b.at(time.Minute)}
	require.NoError(t, b.st.AppendMessage(b.ctx, answer))
	require.Equal(t, rec1, *answer.SessionRecordID)

	again, err := b.st.EndSessionRecord(b.ctx, conv.ID, b.at(2*time.Minute))
	require.NoError(t, err)
	require.Nil(t, again, "no record to end")

	// Well within the gap, the next message starts a record of its own.
	next := b.inboundGap(t, "chat", "new topic", b.at(2*time.Minute), gap)
	require.True(t, next.NewRecord)
	require.Nil(t, next.EndedRecordID, "the record was ended already")
	rec2 := *next.Conversation.CurrentRecordID
	require.NotEqual(t, rec1, rec2)
	require.Equal(t, rec2, *next.Message.SessionRecordID)

	// The ended record is summarised, the new one not yet.
	recs, err := b.st.ClaimEndedRecords(b.ctx, b.at(3*time.Minute), gap, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, rec1, recs[0].ID)

	_, err = b.st.EndSessionRecord(b.ctx, 987654, b.t0)
	require.ErrorIs(t, err, core.ErrNotFound)
}

// A chat command and its answer are stored like messages, but plan no
// run and neither make a proactive follow-up stale nor skip its run.
func testCommandsAreNotUserTurns(t *testing.T, open Opener) {
	b := setup(t, open)
	job, conv := b.followUp(t, "chat", time.Hour)
	cmd, answer := b.command(t, "chat", "/reminders", "You have nothing scheduled.", b.at(10*time.Minute))
	require.Equal(t, core.SourceCommand, cmd.Source)
	require.Equal(t, core.RoleUser, cmd.Role)
	runs, err := b.st.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, runs, 1, "only the first message's run")

	due := b.at(time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(time.Minute), []core.JobKind{core.JobProactive}, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	plan, err := b.st.PlanJobRun(b.ctx, claimed[0], "w", due, due.Add(time.Minute))
	require.NoError(t, err)
	require.Empty(t, plan.Dropped, "a command is not the user writing")
	require.NotZero(t, plan.RunID)

	// Another command before the run starts does not make it stale.
	b.command(t, "chat", "/help", "Here is what I understand.", due)
	run, err := b.st.ClaimRun(b.ctx, "w", due)
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, plan.RunID, run.ID)
	require.Equal(t, core.RunRunning, run.Status)
	msgs, err := b.st.Messages(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, core.SourceReply, msgs[1].Source)
	require.Equal(t, msgs[1].ID, *run.ExpectedLastMessageID, "it expects the newest message that is not a command")
	require.NotEqual(t, answer.ID, *run.ExpectedLastMessageID)
	require.Equal(t, job.ID, *run.JobID)
}

// A user's turn whose worker died is queued again even though a command
// was answered after its message: that answer is not the turn's reply.
func testReapStaleIgnoresCommandAnswers(t *testing.T, open Opener) {
	b := setup(t, open)
	lone := b.claimed(t, "lone", "w1", b.t0)
	b.command(t, "lone", "/help", "Here is what I understand.", b.at(time.Second))
	_, retried, err := b.st.ReapStaleRuns(b.ctx, b.at(time.Minute), b.at(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, retried)
	runs, err := b.st.Runs(b.ctx, lone.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	require.Equal(t, core.RunQueued, runs[1].Status)
	require.Equal(t, *lone.TriggerMessageID, *runs[1].TriggerMessageID)
}
