package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// followUp makes the run of a fresh conversation's first message finish
// with a reply and a proactive job due after delay; it returns the job
// and the conversation.
func (b *testBundle) followUp(t *testing.T, thread string, delay time.Duration) (core.Job, core.Conversation) {
	t.Helper()
	res := b.inbound(t, thread, "my bread is rising", b.t0, true)
	run, err := b.st.ClaimRun(b.ctx, "w", b.t0)
	require.NoError(t, err)
	rec := *res.Conversation.CurrentRecordID
	job := &core.Job{Kind: core.JobProactive, Text: "check on the bread", DueAt: b.t0.Add(delay), Origin: "control_token", SessionRecordID: &rec}
	reply := &core.Message{Role: core.RoleAssistant, Content: "good luck!", Source: core.SourceReply}
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w", core.RunCompletion{Status: core.RunSucceeded,
		Messages: []*core.Message{reply}, Jobs: []*core.Job{job}, Now: b.t0}))
	require.NotZero(t, job.ID)
	require.Equal(t, reply.Seq, job.AfterSeq, "the job remembers the newest message")
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, got.Status)
	return got, res.Conversation
}

func testProactiveJobLifecycle(t *testing.T, open Opener) {
	b := setup(t, open)
	job, conv := b.followUp(t, "chat", time.Hour)
	kinds := []core.JobKind{core.JobProactive}

	next, err := b.st.NextJobDue(b.ctx, kinds)
	require.NoError(t, err)
	require.True(t, next.Equal(b.at(time.Hour)))
	none, err := b.st.ClaimDueJobs(b.ctx, "w", b.at(59*time.Minute), b.at(time.Hour), kinds, 10)
	require.NoError(t, err)
	require.Empty(t, none, "not due yet")

	due := b.at(time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(5*time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, core.JobSending, claimed[0].Status)
	again, err := b.st.ClaimDueJobs(b.ctx, "w2", due, due.Add(5*time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Empty(t, again, "a claimed job is not claimed twice")

	plan, err := b.st.PlanJobRun(b.ctx, claimed[0], "w", due, due.Add(time.Minute))
	require.NoError(t, err)
	require.NotZero(t, plan.RunID)
	require.Empty(t, plan.Dropped)
	run, err := b.st.ClaimRun(b.ctx, "w", due)
	require.NoError(t, err)
	require.Equal(t, plan.RunID, run.ID)
	require.Equal(t, core.RunProactive, run.Kind)
	require.Equal(t, job.ID, *run.JobID)

	msg := &core.Message{Role: core.RoleAssistant, Content: "how is the bread?", Source: core.SourceProactive, PlatformMessageID: "m-9"}
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w", core.RunCompletion{Status: core.RunSucceeded,
		Messages: []*core.Message{msg}, JobOutcome: &core.JobOutcome{Status: core.JobSent}, Now: due}))
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobSent, got.Status)
	require.Equal(t, 1, got.Attempts)
	require.Equal(t, "m-9", got.PlatformMessageID)
	require.NotNil(t, got.SentAt)
	require.Equal(t, conv.ID, got.ConversationID)
}

func testProactiveJobDroppedWhenTheUserWrote(t *testing.T, open Opener) {
	b := setup(t, open)
	job, _ := b.followUp(t, "chat", time.Hour)
	b.inbound(t, "chat", "the bread is fine!", b.at(30*time.Minute), false)
	due := b.at(time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(time.Minute), []core.JobKind{core.JobProactive}, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	plan, err := b.st.PlanJobRun(b.ctx, claimed[0], "w", due, due.Add(time.Minute))
	require.NoError(t, err)
	require.Zero(t, plan.RunID)
	require.Equal(t, "dropped: the user wrote since", plan.Dropped)
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, got.Status)
	require.Equal(t, "dropped: the user wrote since", got.LastError)
}

func testProactiveJobDroppedForANewerRecord(t *testing.T, open Opener) {
	b := setup(t, open)
	job, _ := b.followUp(t, "chat", 2*time.Hour)
	// A scheduled send, not the user, opened nothing; but a new record
	// began (the user wrote after a gap and then the job got later).
	_, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "chat",
		Text: "new day", Now: b.at(time.Hour), SessionGap: 10 * time.Minute})
	require.NoError(t, err)
	due := b.at(2 * time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(time.Minute), []core.JobKind{core.JobProactive}, 10)
	require.NoError(t, err)
	plan, err := b.st.PlanJobRun(b.ctx, claimed[0], "w", due, due.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, "dropped: a newer session record exists", plan.Dropped)
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, got.Status)
}

func testProactiveJobReleasedAndLeaseExpiry(t *testing.T, open Opener) {
	b := setup(t, open)
	job, _ := b.followUp(t, "chat", time.Hour)
	kinds := []core.JobKind{core.JobProactive}
	due := b.at(time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(5*time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	// Quiet hours: back to pending, later.
	later := b.at(9 * time.Hour)
	ok, err := b.st.ReleaseJob(b.ctx, job.ID, "w", core.JobPending, later, "deferred to the end of the user's quiet hours")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.st.ReleaseJob(b.ctx, job.ID, "w", core.JobCancelled, later, "again")
	require.NoError(t, err)
	require.False(t, ok, "a job no longer held is not released twice")
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, got.Status)
	require.True(t, got.DueAt.Equal(later))

	// A process claims it and dies: after the lease another takes it.
	claimed, err = b.st.ClaimDueJobs(b.ctx, "dead", later, later.Add(5*time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	none, err := b.st.ClaimDueJobs(b.ctx, "w", later.Add(4*time.Minute), later.Add(9*time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Empty(t, none, "the lease still holds")
	next, err := b.st.NextJobDue(b.ctx, kinds)
	require.NoError(t, err)
	require.True(t, next.Equal(later.Add(5*time.Minute)), "the lease's end is the next due time")
	taken, err := b.st.ClaimDueJobs(b.ctx, "w", later.Add(6*time.Minute), later.Add(11*time.Minute), kinds, 10)
	require.NoError(t, err)
	require.Len(t, taken, 1)
	require.Equal(t, "w", taken[0].Owner)
}

func testProactiveRunSkippedSettlesItsJob(t *testing.T, open Opener) {
	b := setup(t, open)
	job, conv := b.followUp(t, "chat", time.Hour)
	due := b.at(time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(time.Minute), []core.JobKind{core.JobProactive}, 10)
	require.NoError(t, err)
	plan, err := b.st.PlanJobRun(b.ctx, claimed[0], "w", due, due.Add(time.Minute))
	require.NoError(t, err)
	require.NotZero(t, plan.RunID)
	// Something is said before the run starts (another process's send).
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant,
		Content: "reminder", Source: core.SourceScheduledSend}))
	run, err := b.st.ClaimRun(b.ctx, "w", due)
	require.NoError(t, err)
	require.Nil(t, run, "the stale follow-up run is skipped")
	r, err := b.st.Run(b.ctx, plan.RunID)
	require.NoError(t, err)
	require.Equal(t, core.RunSkipped, r.Status)
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, got.Status)
	require.Contains(t, got.LastError, "moved on")
}

func testProactiveJobWaitsForAQueuedTurn(t *testing.T, open Opener) {
	b := setup(t, open)
	job, _ := b.followUp(t, "chat", time.Hour)
	due := b.at(time.Hour)
	claimed, err := b.st.ClaimDueJobs(b.ctx, "w", due, due.Add(time.Minute), []core.JobKind{core.JobProactive}, 10)
	require.NoError(t, err)
	// A cron turn is queued (it keeps its kind and defers the follow-up).
	require.NoError(t, b.st.DB().Exec(`INSERT INTO runs (conversation_id, kind, status, run_after, created_at, updated_at)
		VALUES (?, 'cron_turn', 'queued', ?, ?, ?)`, job.ConversationID, due.Add(time.Hour), due, due).Error)
	plan, err := b.st.PlanJobRun(b.ctx, claimed[0], "w", due, due.Add(time.Minute))
	require.NoError(t, err)
	require.True(t, plan.Busy)
	got, err := b.st.Job(b.ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, got.Status)
	require.True(t, got.DueAt.Equal(due.Add(time.Minute)))
	require.Zero(t, got.Attempts, "no attempt was made")
}
