package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// recurring creates a recurring job on a new conversation of thread, due
// at due.
func (b *testBundle) recurring(t *testing.T, thread string, due time.Time) core.Job {
	t.Helper()
	conv := b.inbound(t, thread, "hi", b.t0, false).Conversation
	j := &core.Job{ConversationID: conv.ID, Name: "daily check-in", Text: "ask how they are", Recurrence: "0 9 * * *", DueAt: due}
	require.NoError(t, b.st.CreateRecurringJob(b.ctx, j, 10))
	return *j
}

// claimRecurring claims the due recurring jobs for owner at now.
func (b *testBundle) claimRecurring(t *testing.T, owner string, now time.Time) []core.Job {
	t.Helper()
	jobs, err := b.st.ClaimDueJobs(b.ctx, owner, now, now.Add(time.Minute), []core.JobKind{core.JobAgentTurn}, 10)
	require.NoError(t, err)
	return jobs
}

func testRecurringJobLifecycle(t *testing.T, open Opener) {
	b := setup(t, open)
	due := b.at(time.Hour)
	j := b.recurring(t, "chat-1", due)
	require.Equal(t, core.JobAgentTurn, j.Kind)
	require.Equal(t, core.CatchUpLatest, j.CatchUp, "the default policy")
	require.True(t, j.NextRunAt.Equal(due))

	// The cap counts enabled recurring jobs only.
	for range 2 {
		require.NoError(t, b.st.CreateRecurringJob(b.ctx, &core.Job{ConversationID: j.ConversationID, Name: "x", Text: "y",
			Recurrence: "every 1h", DueAt: due}, 3))
	}
	err := b.st.CreateRecurringJob(b.ctx, &core.Job{ConversationID: j.ConversationID, Name: "x", Text: "y", Recurrence: "every 1h", DueAt: due}, 3)
	require.ErrorIs(t, err, core.ErrTooManyRecurring)
	last, err := b.st.ConversationJobs(b.ctx, j.ConversationID, core.JobAgentTurn)
	require.NoError(t, err)
	_, err = b.st.CancelJob(b.ctx, j.ConversationID, last[2].ID, "call-9")
	require.NoError(t, err)
	require.NoError(t, b.st.CreateRecurringJob(b.ctx, &core.Job{ConversationID: j.ConversationID, Name: "x", Text: "y",
		Recurrence: "every 1h", DueAt: b.at(48 * time.Hour)}, 3), "a cancelled job leaves room")

	require.Empty(t, b.claimRecurring(t, "w1", b.at(59*time.Minute)), "not before its time")
	claimed := b.claimRecurring(t, "w1", due)
	require.Len(t, claimed, 2, "the cancelled one is not claimed, the new one is not due")
	got := claimed[0]
	require.Equal(t, j.ID, got.ID)
	next := due.Add(24 * time.Hour)
	plan, err := b.st.StartCronTurn(b.ctx, got, "w1", core.CronStart{Occurrence: &due, Next: next, Now: due, RetryAt: due.Add(time.Second)})
	require.NoError(t, err)
	require.NotZero(t, plan.RunID)
	require.False(t, plan.Busy || plan.Duplicate || plan.Lost)

	run, err := b.st.Run(b.ctx, plan.RunID)
	require.NoError(t, err)
	require.Equal(t, core.RunCronTurn, run.Kind)
	require.Equal(t, core.RunQueued, run.Status)
	require.Equal(t, j.ID, *run.JobID)
	require.True(t, run.OccurrenceAt.Equal(due))
	require.Nil(t, run.TriggerMessageID, "the trigger is stored when the turn starts")

	after, err := b.st.Job(b.ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, after.Status)
	require.True(t, after.NextRunAt.Equal(next))
	require.True(t, after.DueAt.Equal(next))
	require.Equal(t, 1, after.Attempts)
	require.Empty(t, after.Owner)

	// The scheduler's old copy is no longer its to plan.
	plan, err = b.st.StartCronTurn(b.ctx, got, "w1", core.CronStart{Occurrence: &due, Next: next, Now: due})
	require.NoError(t, err)
	require.True(t, plan.Lost)
	require.EqualValues(t, 1, b.count(t, "runs", "job_id = ?", j.ID))
}

// testCronOccurrenceRunsOnce: an occurrence gets one run, whichever
// scheduler plans it and however their leases overlap.
func testCronOccurrenceRunsOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	due := b.at(time.Hour)
	j := b.recurring(t, "chat-1", due)
	next := due.Add(24 * time.Hour)
	start := core.CronStart{Occurrence: &due, Next: next, Now: due}

	// A claims and stalls past its lease; B takes the job over and plans it.
	a := b.claimRecurring(t, "sched-a", due)
	require.Len(t, a, 1)
	bb := b.claimRecurring(t, "sched-b", due.Add(2*time.Minute))
	require.Len(t, bb, 1, "the expired lease is taken over")
	planB, err := b.st.StartCronTurn(b.ctx, bb[0], "sched-b", start)
	require.NoError(t, err)
	require.NotZero(t, planB.RunID)
	planA, err := b.st.StartCronTurn(b.ctx, a[0], "sched-a", start)
	require.NoError(t, err)
	require.True(t, planA.Lost, "A wakes up to find the job no longer its own")
	require.EqualValues(t, 1, b.count(t, "runs", "job_id = ?", j.ID))

	// Whatever a scheduler believes, the database keeps one run per
	// occurrence: a second plan of an occurrence that has its run is a
	// duplicate, and the job still moves on.
	require.NoError(t, b.st.DB().WithContext(b.ctx).Exec(`UPDATE runs SET status = 'succeeded' WHERE job_id = ?`, j.ID).Error)
	moved, err := b.st.MoveRecurringJob(b.ctx, j.ID, due) // a scheduler's stale view
	require.NoError(t, err)
	require.True(t, moved)
	stale := b.claimRecurring(t, "sched-a", next)
	require.Len(t, stale, 1)
	again, err := b.st.StartCronTurn(b.ctx, stale[0], "sched-a", start)
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Zero(t, again.RunID)
	require.EqualValues(t, 1, b.count(t, "runs", "job_id = ?", j.ID))
	after, err := b.st.Job(b.ctx, j.ID)
	require.NoError(t, err)
	require.True(t, after.NextRunAt.Equal(next))
	require.Equal(t, core.JobPending, after.Status)

	// And the index refuses a second run of the occurrence outright.
	err = b.st.DB().WithContext(b.ctx).Exec(`INSERT INTO runs (conversation_id, kind, status, run_after, job_id, occurrence_at, created_at, updated_at)
		SELECT conversation_id, kind, 'succeeded', run_after, job_id, occurrence_at, created_at, updated_at FROM runs WHERE job_id = ?`, j.ID).Error
	require.Error(t, err)
}

func testCronTurnWaitsForAQueuedRun(t *testing.T, open Opener) {
	b := setup(t, open)
	due := b.at(time.Hour)
	j := b.recurring(t, "chat-1", due)
	b.inbound(t, "chat-1", "are you there?", due, true) // a user turn is queued
	claimed := b.claimRecurring(t, "w1", due)
	require.Len(t, claimed, 1)
	retry := due.Add(5 * time.Second)
	plan, err := b.st.StartCronTurn(b.ctx, claimed[0], "w1", core.CronStart{Occurrence: &due, Next: due.Add(24 * time.Hour), Now: due, RetryAt: retry})
	require.NoError(t, err)
	require.True(t, plan.Busy)
	require.EqualValues(t, 0, b.count(t, "runs", "job_id = ?", j.ID))
	waiting, err := b.st.Job(b.ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobPending, waiting.Status)
	require.True(t, waiting.DueAt.Equal(retry), "looked at again soon")
	require.True(t, waiting.NextRunAt.Equal(due), "its occurrence is kept")
}

func testCancelRecurringWhileClaimed(t *testing.T, open Opener) {
	b := setup(t, open)
	due := b.at(time.Hour)
	j := b.recurring(t, "chat-1", due)
	claimed := b.claimRecurring(t, "w1", due)
	require.Len(t, claimed, 1)
	got, err := b.st.CancelJob(b.ctx, j.ConversationID, j.ID, "call-1")
	require.NoError(t, err, "a recurring job is cancelled even while the scheduler holds it")
	require.Equal(t, core.JobCancelled, got.Status)
	plan, err := b.st.StartCronTurn(b.ctx, claimed[0], "w1", core.CronStart{Occurrence: &due, Next: due.Add(24 * time.Hour), Now: due})
	require.NoError(t, err)
	require.True(t, plan.Lost)
	require.EqualValues(t, 0, b.count(t, "runs", "job_id = ?", j.ID))
	after, err := b.st.Job(b.ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, after.Status, "and it stays cancelled")
	moved, err := b.st.MoveRecurringJob(b.ctx, j.ID, due.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, moved, "a cancelled job is not moved")

	// A message job being sent is not cancelled.
	msg := &core.Job{ConversationID: j.ConversationID, Text: "hi", DueAt: due}
	_, err = b.st.ScheduleMessage(b.ctx, msg, false, 10)
	require.NoError(t, err)
	_, err = b.st.ClaimDueJobs(b.ctx, "w1", due, due.Add(time.Minute), []core.JobKind{core.JobMessage}, 10)
	require.NoError(t, err)
	_, err = b.st.CancelJob(b.ctx, j.ConversationID, msg.ID, "call-2")
	require.ErrorIs(t, err, core.ErrNotPending)
}

func testAppendTriggerJoinsOrStartsARecord(t *testing.T, open Opener) {
	b := setup(t, open)
	res := b.inboundGap(t, "chat-1", "hi", b.t0, 10*time.Minute)
	rec := *res.Conversation.CurrentRecordID
	within := &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleUser, Source: core.SourceCronTurn,
		Content: "Scheduled job triggered: a", CreatedAt: b.at(10 * time.Minute)}
	conv, err := b.st.AppendTrigger(b.ctx, within, 10*time.Minute)
	require.NoError(t, err)
	require.Equal(t, int64(2), within.Seq)
	require.Equal(t, rec, *within.SessionRecordID, "within the gap: the same record")
	require.Equal(t, int64(2), conv.LastSeq)

	later := &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleUser, Source: core.SourceCronTurn,
		Content: "Scheduled job triggered: b", CreatedAt: b.at(21 * time.Minute)}
	conv, err = b.st.AppendTrigger(b.ctx, later, 10*time.Minute)
	require.NoError(t, err)
	require.Equal(t, int64(3), later.Seq)
	require.NotEqual(t, rec, *later.SessionRecordID, "after the gap: a new record")
	require.Equal(t, *later.SessionRecordID, *conv.CurrentRecordID)
	ended, err := b.st.SessionRecord(b.ctx, rec)
	require.NoError(t, err)
	require.True(t, ended.EndedAt.Equal(b.at(10*time.Minute)), "the old record ends at its last message")

	_, err = b.st.AppendTrigger(b.ctx, &core.Message{ConversationID: 999999, Role: core.RoleUser, Source: core.SourceCronTurn}, time.Minute)
	require.True(t, errors.Is(err, core.ErrNotFound), "got %v", err)
}
