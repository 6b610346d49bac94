package storetest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// inboundWhile records a planned user message on thread under policy p.
func (b *testBundle) inboundWhile(t *testing.T, thread string, now time.Time, p core.BusyPolicy) core.InboundResult {
	t.Helper()
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{
		Platform: telegram, ChannelThreadID: thread, ChannelUserID: thread, Text: "hi",
		Now: now, PlanRun: true, RunAfter: now.Add(1500 * time.Millisecond), WhileRunning: p,
	})
	require.NoError(t, err)
	return res
}

func testDebounceRunAfter(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inboundWhile(t, "chat-1", b.t0, core.BusyQueue)
	require.Equal(t, b.at(1500*time.Millisecond), first.Run.RunAfter)
	second := b.inboundWhile(t, "chat-1", b.at(time.Second), core.BusyQueue)
	require.Equal(t, first.Run.ID, second.Run.ID, "one queued run per conversation")
	require.Equal(t, b.at(2500*time.Millisecond), second.Run.RunAfter, "a later message moves the debounce")
	require.Equal(t, second.Message.ID, *second.Run.TriggerMessageID)

	run, err := b.st.ClaimRun(b.ctx, "w1", b.at(2499*time.Millisecond))
	require.NoError(t, err)
	require.Nil(t, run, "not before the debounce ends")
	run, err = b.st.ClaimRun(b.ctx, "w1", b.at(2500*time.Millisecond))
	require.NoError(t, err)
	require.NotNil(t, run)
}

func testBusyPolicies(t *testing.T, open Opener) {
	b := setup(t, open)
	for _, p := range []core.BusyPolicy{core.BusyReject, core.BusyQueue, core.BusyRestart} {
		thread := "chat-" + string(p)
		running := b.claimed(t, thread, "w1", b.t0)
		res := b.inboundWhile(t, thread, b.at(time.Second), p)
		if p != core.BusyQueue {
			require.NotNil(t, res.Running, "%s: the running run is reported", p)
			require.Equal(t, running.ID, res.Running.ID)
		}
		after, err := b.st.Run(b.ctx, running.ID)
		require.NoError(t, err)
		switch p {
		case core.BusyReject:
			require.True(t, res.Rejected)
			require.Nil(t, res.Run, "reject plans no run")
			require.Equal(t, int64(0), b.count(t, "runs", "conversation_id = ? AND status = 'queued'", res.Conversation.ID))
			require.Nil(t, after.CancelRequestedAt)
		case core.BusyQueue:
			require.False(t, res.Rejected)
			require.NotNil(t, res.Run)
			require.Equal(t, core.RunQueued, res.Run.Status)
			require.Nil(t, after.CancelRequestedAt, "queue lets the running run finish")
		case core.BusyRestart:
			require.NotNil(t, res.Run)
			require.NotNil(t, after.CancelRequestedAt, "restart asks the running run to stop")
			require.Equal(t, b.at(time.Second), *after.CancelRequestedAt)
			require.NotNil(t, res.Running.CancelRequestedAt)
		}
		// Either way the message is stored.
		require.Equal(t, int64(2), res.Message.Seq)
	}
}

func testHeartbeatRunsReportsStops(t *testing.T, open Opener) {
	b := setup(t, open)
	keep := b.claimed(t, "keep", "w1", b.t0)
	restart := b.claimed(t, "restart", "w1", b.t0)
	theirs := b.claimed(t, "theirs", "w2", b.t0)
	b.inboundWhile(t, "restart", b.at(time.Second), core.BusyRestart)

	stop, err := b.st.HeartbeatRuns(b.ctx, "w1", b.at(10*time.Second), []int64{keep.ID, restart.ID, theirs.ID})
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{restart.ID, theirs.ID}, stop, "cancel requested, and not w1's")
	for id, want := range map[int64]time.Time{keep.ID: b.at(10 * time.Second), restart.ID: b.at(10 * time.Second), theirs.ID: b.t0} {
		run, err := b.st.Run(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, *run.HeartbeatAt, "run %d", id)
	}
	stop, err = b.st.HeartbeatRuns(b.ctx, "w1", b.at(11*time.Second), nil)
	require.NoError(t, err)
	require.Empty(t, stop)
}

// planKind inserts a queued run of kind k expecting the conversation's
// newest message, as the proactive and cron features will.
func (b *testBundle) planKind(t *testing.T, thread string, k core.RunKind, now time.Time) core.Run {
	t.Helper()
	res := b.inbound(t, thread, "hello", now, false)
	var run core.Run
	require.NoError(t, b.st.DB().WithContext(b.ctx).Raw(`INSERT INTO runs
		(conversation_id, kind, status, expected_last_message_id, run_after, created_at, updated_at)
		VALUES (?, ?, 'queued', ?, ?, ?, ?) RETURNING id`,
		res.Conversation.ID, string(k), res.Message.ID, now.UTC(), now.UTC(), now.UTC()).Row().Scan(&run.ID))
	run.ConversationID = res.Conversation.ID
	return run
}

func testStaleProactiveSkipped(t *testing.T, open Opener) {
	b := setup(t, open)
	for _, k := range []core.RunKind{core.RunProactive, core.RunContinue} {
		thread := "stale-" + string(k)
		stale := b.planKind(t, thread, k, b.t0)
		// The user wrote after the run was planned (stored without a plan
		// of its own, as another process's message might be).
		b.inbound(t, thread, "actually, never mind", b.at(time.Second), false)
		run, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Minute))
		require.NoError(t, err)
		require.Nil(t, run, "%s: a run that is no answer to the newest message does not speak", k)
		got, err := b.st.Run(b.ctx, stale.ID)
		require.NoError(t, err)
		require.Equal(t, core.RunSkipped, got.Status)
		require.Contains(t, got.Error, "moved on")
		require.NotNil(t, got.FinishedAt)
	}

	fresh := b.planKind(t, "fresh", core.RunProactive, b.t0)
	run, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Minute))
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, fresh.ID, run.ID, "a proactive run whose conversation did not move on runs")
}

func testCronTurnDeferredNotSkipped(t *testing.T, open Opener) {
	b := setup(t, open)
	cron := b.planKind(t, "cron", core.RunCronTurn, b.t0)
	// A user message arrives: the queued cron turn keeps its kind and now
	// answers after the message too.
	res := b.inboundWhile(t, "cron", b.at(time.Second), core.BusyQueue)
	require.Equal(t, cron.ID, res.Run.ID)
	require.Equal(t, core.RunCronTurn, res.Run.Kind)
	run, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Minute))
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, cron.ID, run.ID)

	// A queued proactive run becomes the user's turn instead.
	pro := b.planKind(t, "pro", core.RunProactive, b.t0)
	res = b.inboundWhile(t, "pro", b.at(time.Second), core.BusyQueue)
	require.Equal(t, pro.ID, res.Run.ID)
	require.Equal(t, core.RunUserTurn, res.Run.Kind)
}

// Two goroutines set two runs of one conversation running at the same
// moment: the database refuses the second, whatever the process does.
func testDatabaseRefusesSecondRunning(t *testing.T, open Opener) {
	b := setup(t, open)
	res := b.inbound(t, "chat-1", "hi", b.t0, true)
	var other int64
	require.NoError(t, b.st.DB().WithContext(b.ctx).Raw(`INSERT INTO runs
		(conversation_id, kind, status, run_after, created_at, updated_at)
		VALUES (?, 'user_turn', 'succeeded', ?, ?, ?) RETURNING id`,
		res.Conversation.ID, b.t0, b.t0, b.t0).Row().Scan(&other))

	var wg sync.WaitGroup
	errs := make([]error, 2)
	start := make(chan struct{})
	for i, id := range []int64{res.Run.ID, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = b.st.DB().WithContext(b.ctx).Exec(`UPDATE runs SET status = 'running' WHERE id = ?`, id).Error
		}()
	}
	close(start)
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			require.Contains(t, strings.ToLower(err.Error()), "unique", "refused by runs_one_running, got %v", err)
		}
	}
	require.Equal(t, 1, failed, "exactly one of the two becomes running: %v", errs)
	require.Equal(t, int64(1), b.count(t, "runs", "conversation_id = ? AND status = 'running'", res.Conversation.ID))
}
