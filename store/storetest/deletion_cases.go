package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// memoryTables are the tables holding a conversation's rows, jobs aside.
// The plugins' tables (facts, mood_points) are the plugins' to check.
var memoryTables = []string{"messages", "runs", "session_records"}

// job creates a job of kind and status on the conversation.
func (b *testBundle) job(t *testing.T, convID int64, kind core.JobKind, status core.JobStatus, name string) core.Job {
	t.Helper()
	j := &core.Job{ConversationID: convID, Kind: kind, Status: status, Name: name, Text: "how was the day?",
		DueAt: b.at(time.Hour), CreatedAt: b.t0}
	if kind == core.JobAgentTurn {
		j.Recurrence = "0 9 * * *"
	}
	require.NoError(t, b.st.CreateJob(b.ctx, j))
	return *j
}

// remembered gives a conversation two messages (with their session record
// and a queued run).
func (b *testBundle) remembered(t *testing.T, thread string) core.Conversation {
	t.Helper()
	b.inbound(t, thread, "hi", b.t0, true)
	conv := b.inbound(t, thread, "I bake bread on Sundays", b.at(time.Second), true).Conversation
	return conv
}

// requireKept checks that the conversation and all its rows are there.
func (b *testBundle) requireKept(t *testing.T, convID int64, jobs int64) {
	t.Helper()
	_, err := b.st.Conversation(b.ctx, convID)
	require.NoError(t, err)
	require.Equal(t, int64(2), b.count(t, "messages", "conversation_id = ?", convID))
	for _, table := range memoryTables {
		require.NotZero(t, b.count(t, table, "conversation_id = ?", convID), table)
	}
	require.Equal(t, jobs, b.count(t, "jobs", "conversation_id = ?", convID))
}

// requireGone checks that nothing of the conversation is left.
func (b *testBundle) requireGone(t *testing.T, convID int64) {
	t.Helper()
	_, err := b.st.Conversation(b.ctx, convID)
	require.ErrorIs(t, err, core.ErrNotFound)
	for _, table := range append(memoryTables, "jobs") {
		require.Zero(t, b.count(t, table, "conversation_id = ?", convID), table)
	}
}

func testDeleteBlockedByAutomations(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.remembered(t, "bound")
	daily := b.job(t, conv.ID, core.JobAgentTurn, core.JobPending, "daily check-in")
	weekly := b.job(t, conv.ID, core.JobAgentTurn, core.JobCancelled, "weekly review")
	b.job(t, conv.ID, core.JobMessage, core.JobPending, "")

	d, err := b.st.DeleteConversation(b.ctx, conv.ID, false)
	require.ErrorIs(t, err, core.ErrBlockedByAutomations)
	require.ErrorContains(t, err, "deleting conversation")
	require.True(t, d.Blocked())
	// Every recurring job is listed, the disabled one too: the caller sees
	// all that confirming would delete.
	require.Equal(t, core.Deletion{Automations: []core.Automation{
		{ID: daily.ID, Name: "daily check-in", Enabled: true},
		{ID: weekly.ID, Name: "weekly review", Enabled: false},
	}}, d)
	b.requireKept(t, conv.ID, 3)

	// A job being run right now (sending) is enabled too.
	busy := b.remembered(t, "busy")
	running := b.job(t, busy.ID, core.JobAgentTurn, core.JobSending, "morning")
	d, err = b.st.DeleteConversation(b.ctx, busy.ID, false)
	require.ErrorIs(t, err, core.ErrBlockedByAutomations)
	require.Equal(t, []core.Automation{{ID: running.ID, Name: "morning", Enabled: true}}, d.Automations)
	b.requireKept(t, busy.ID, 1)
}

func testDeleteDisabledAutomationsDoNotBlock(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.remembered(t, "quiet")
	b.job(t, conv.ID, core.JobAgentTurn, core.JobCancelled, "weekly review")
	b.job(t, conv.ID, core.JobAgentTurn, core.JobFailed, "broken")
	// One-shot jobs never block, pending or not: they go with it.
	b.job(t, conv.ID, core.JobMessage, core.JobPending, "")
	b.job(t, conv.ID, core.JobProactive, core.JobPending, "")
	keep := b.remembered(t, "kept")
	b.job(t, keep.ID, core.JobAgentTurn, core.JobPending, "daily check-in")

	d, err := b.st.DeleteConversation(b.ctx, conv.ID, false)
	require.NoError(t, err)
	// Automations are listed only when they block.
	require.Equal(t, core.Deletion{Deleted: true, Jobs: 4}, d)
	require.False(t, d.Blocked())
	b.requireGone(t, conv.ID)
	b.requireKept(t, keep.ID, 1)
}

func testDeleteConfirmedTakesEverything(t *testing.T, open Opener) {
	b := setup(t, open)
	conv := b.remembered(t, "doomed")
	daily := b.job(t, conv.ID, core.JobAgentTurn, core.JobPending, "daily check-in")
	reminder := b.job(t, conv.ID, core.JobMessage, core.JobPending, "")
	keep := b.remembered(t, "kept")
	kept := b.job(t, keep.ID, core.JobAgentTurn, core.JobPending, "daily check-in")

	d, err := b.st.DeleteConversation(b.ctx, conv.ID, true)
	require.NoError(t, err)
	require.Equal(t, core.Deletion{Deleted: true, Jobs: 2}, d)
	b.requireGone(t, conv.ID)
	for _, id := range []int64{daily.ID, reminder.ID} {
		_, err = b.st.Job(b.ctx, id)
		require.ErrorIs(t, err, core.ErrNotFound)
	}
	b.requireKept(t, keep.ID, 1)
	_, err = b.st.Job(b.ctx, kept.ID)
	require.NoError(t, err)

	_, err = b.st.DeleteConversation(b.ctx, conv.ID, true)
	require.ErrorIs(t, err, core.ErrNotFound, "deleted once")
}

func testDeleteUnknownConversation(t *testing.T, open Opener) {
	b := setup(t, open)
	for _, confirm := range []bool{false, true} {
		d, err := b.st.DeleteConversation(b.ctx, 424242, confirm)
		require.ErrorIs(t, err, core.ErrNotFound)
		require.ErrorContains(t, err, "conversation 424242")
		require.Equal(t, core.Deletion{}, d)
	}
}

// testDeleteRacesAJobInsert has a recurring job inserted, not yet
// committed, when the deletion starts: the deletion must wait for it and
// then refuse, not delete a job it never saw. Only PostgreSQL runs writers
// concurrently; SQLite has one writer at a time.
func testDeleteRacesAJobInsert(t *testing.T, open Opener) {
	b := setup(t, open)
	if b.st.Driver() != "postgres" {
		t.Skip("writers never interleave on SQLite")
	}
	conv := b.remembered(t, "raced")

	tx := b.st.DB().WithContext(b.ctx).Begin()
	require.NoError(t, tx.Error)
	defer tx.Rollback()
	var pid, jobID int64
	require.NoError(t, tx.Raw(`SELECT pg_backend_pid()`).Row().Scan(&pid))
	require.NoError(t, tx.Raw(`INSERT INTO jobs (conversation_id, kind, status, name, due_at, recurrence, created_at, updated_at)
		VALUES (?, 'agent_turn', 'pending', 'daily check-in', ?, '0 9 * * *', ?, ?) RETURNING id`,
		conv.ID, b.at(time.Hour), b.t0, b.t0).Row().Scan(&jobID))

	type result struct {
		d   core.Deletion
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := b.st.DeleteConversation(b.ctx, conv.ID, false)
		done <- result{d, err}
	}()
	// Commit only once the deletion waits on the insert's lock.
	require.Eventually(t, func() bool {
		var n int64
		err := b.st.DB().WithContext(b.ctx).Raw(`SELECT COUNT(*) FROM pg_locks
			WHERE NOT granted AND ? = ANY(pg_blocking_pids(pid))`, pid).Row().Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 5*time.Millisecond, "the deletion never waited for the insert")
	require.NoError(t, tx.Commit().Error)

	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the deletion did not finish after the insert committed")
	}
	require.ErrorIs(t, res.err, core.ErrBlockedByAutomations)
	require.Equal(t, []core.Automation{{ID: jobID, Name: "daily check-in", Enabled: true}}, res.d.Automations)
	b.requireKept(t, conv.ID, 1)
}
