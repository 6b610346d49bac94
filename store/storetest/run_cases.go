package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func testClaimNothingDue(t *testing.T, open Opener) {
	b := setup(t, open)
	run, err := b.st.ClaimRun(b.ctx, "w1", b.t0)
	require.NoError(t, err)
	require.Nil(t, run)
}

func testClaimFuture(t *testing.T, open Opener) {
	b := setup(t, open)
	b.inbound(t, "chat-1", "later", b.at(time.Minute), true)

	run, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Minute-time.Microsecond))
	require.NoError(t, err)
	require.Nil(t, run, "a run is not claimed before its run_after")

	run, err = b.st.ClaimRun(b.ctx, "w1", b.at(time.Minute))
	require.NoError(t, err)
	require.NotNil(t, run, "a run is due at its run_after")
}

func testClaimConversationBusy(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.claimed(t, "chat-1", "w1", b.t0)
	require.Equal(t, core.RunRunning, first.Status)
	require.Equal(t, "w1", first.Owner)
	require.Equal(t, b.t0, *first.StartedAt)
	require.Equal(t, b.t0, *first.HeartbeatAt)

	next := b.inbound(t, "chat-1", "while busy", b.at(time.Second), true)
	require.NotEqual(t, first.ID, next.Run.ID)

	run, err := b.st.ClaimRun(b.ctx, "w2", b.at(time.Minute))
	require.NoError(t, err)
	require.Nil(t, run, "a conversation runs one turn at a time")

	require.NoError(t, b.st.CompleteRun(b.ctx, first.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(2 * time.Second)}))
	run, err = b.st.ClaimRun(b.ctx, "w2", b.at(time.Minute))
	require.NoError(t, err)
	require.NotNil(t, run)
	require.Equal(t, next.Run.ID, run.ID)
}

func testClaimOldestFirst(t *testing.T, open Opener) {
	b := setup(t, open)
	late := b.inbound(t, "late", "x", b.at(2*time.Second), true)
	early := b.inbound(t, "early", "x", b.at(time.Second), true)
	// Same run_after: the lower id goes first.
	tieA := b.inbound(t, "tie-a", "x", b.at(3*time.Second), true)
	tieB := b.inbound(t, "tie-b", "x", b.at(3*time.Second), true)

	var order []int64
	for {
		run, err := b.st.ClaimRun(b.ctx, "w1", b.at(time.Hour))
		require.NoError(t, err)
		if run == nil {
			break
		}
		order = append(order, run.ID)
	}
	require.Equal(t, []int64{early.Run.ID, late.Run.ID, tieA.Run.ID, tieB.Run.ID}, order)
}

// testConcurrentClaimers races claimers against a producer: no run is
// claimed twice and no conversation ever has two claimed runs at once.
func testConcurrentClaimers(t *testing.T, open Opener) {
	b := setup(t, open)
	const convs, perConv, claimers = 4, 8, 3
	r := &claimRace{b: b, claimAt: b.at(time.Hour), claimed: map[int64]string{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for c := range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.claim(t, c, done)
		}()
	}
	for i := range perConv {
		for c := range convs {
			b.inbound(t, fmt.Sprintf("chat-%d", c), fmt.Sprintf("m%d", i), b.at(time.Duration(i)*time.Second), true)
		}
	}
	close(done)
	wg.Wait()
	require.Empty(t, r.fail)

	// Whatever the racing claimers left queued, one claimer drains.
	for {
		run, err := b.st.ClaimRun(b.ctx, "drain", r.claimAt)
		require.NoError(t, err)
		if run == nil {
			break
		}
		r.work(t, "drain", run)
	}
	require.Empty(t, r.fail)
	require.Equal(t, int64(0), b.count(t, "runs", "status <> 'succeeded'"))
	require.Equal(t, int64(len(r.claimed)), b.count(t, "runs", "1 = 1"))
}

// claimRace is testConcurrentClaimers' claimers and what they saw.
type claimRace struct {
	b       *testBundle
	claimAt time.Time
	mu      sync.Mutex
	claimed map[int64]string // run → owner
	fail    []string
}

func (r *claimRace) failf(format string, args ...any) {
	r.mu.Lock()
	r.fail = append(r.fail, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// claim is claimer c: it claims and works runs until done is closed and
// it finds none.
func (r *claimRace) claim(t *testing.T, c int, done <-chan struct{}) {
	owner := fmt.Sprintf("w%d", c)
	for {
		// Claimers take one run at a time or, every other one, up
		// to three in one statement (ClaimRuns).
		var runs []*core.Run
		var err error
		if c%2 == 1 {
			runs, err = r.b.st.ClaimRuns(r.b.ctx, owner, r.claimAt, 3)
		} else {
			var run *core.Run
			if run, err = r.b.st.ClaimRun(r.b.ctx, owner, r.claimAt); run != nil {
				runs = append(runs, run)
			}
		}
		if err != nil {
			r.failf("claim: %v", err)
			return
		}
		if len(runs) > 0 {
			for _, run := range runs {
				r.work(t, owner, run)
			}
			continue
		}
		select {
		case <-done:
			return
		default:
		}
	}
}

// work checks that owner alone holds run, then completes it.
func (r *claimRace) work(t *testing.T, owner string, run *core.Run) {
	// While this claimer holds the run, the database must show no other
	// running run of its conversation. (An in-memory "active" map would
	// race: the previous holder's commit lands before it can note it.)
	others := r.b.count(t, "runs", "conversation_id = ? AND status = 'running' AND id <> ?", run.ConversationID, run.ID)
	if others != 0 {
		r.failf("conversation %d: run %d claimed while %d other runs were running", run.ConversationID, run.ID, others)
	}
	r.mu.Lock()
	if prev, ok := r.claimed[run.ID]; ok {
		r.fail = append(r.fail, fmt.Sprintf("run %d claimed by %s and %s", run.ID, prev, owner))
	}
	r.claimed[run.ID] = owner
	r.mu.Unlock()

	err := r.b.st.CompleteRun(r.b.ctx, run.ID, owner, core.RunCompletion{
		Status:   core.RunSucceeded,
		Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: "ok"}},
		Now:      r.claimAt,
	})
	if err != nil {
		r.failf("completing run %d: %v", run.ID, err)
	}
}

func testNextRunAfter(t *testing.T, open Opener) {
	b := setup(t, open)
	next, err := b.st.NextRunAfter(b.ctx)
	require.NoError(t, err)
	require.Nil(t, next)

	b.inbound(t, "a", "x", b.at(5*time.Second), true)
	b.inbound(t, "b", "x", b.at(2*time.Second), true)
	next, err = b.st.NextRunAfter(b.ctx)
	require.NoError(t, err)
	require.NotNil(t, next)
	require.Equal(t, b.at(2*time.Second), *next)
	require.Equal(t, time.UTC, next.Location())

	_, err = b.st.ClaimRun(b.ctx, "w1", b.at(3*time.Second))
	require.NoError(t, err)
	next, err = b.st.NextRunAfter(b.ctx)
	require.NoError(t, err)
	require.Equal(t, b.at(5*time.Second), *next, "running runs are not waited for")

	// b writes again while its turn runs: that run waits behind it, so a
	// claim loop must not wait for it (the turn's completion claims it).
	b.inbound(t, "b", "again", b.at(3*time.Second), true)
	require.Equal(t, int64(1), b.count(t, "runs", "status = 'queued' AND run_after < ?", b.at(5*time.Second).Format("2006-01-02T15:04:05.000000Z")))
	next, err = b.st.NextRunAfter(b.ctx)
	require.NoError(t, err)
	require.Equal(t, b.at(5*time.Second), *next, "a run queued behind a running one is not waited for")

	// A process serving other platforms has nothing to wait for.
	next, err = b.st.NextRunAfter(b.ctx, discord)
	require.NoError(t, err)
	require.Nil(t, next)
	next, err = b.st.NextRunAfter(b.ctx, discord, telegram)
	require.NoError(t, err)
	require.Equal(t, b.at(5*time.Second), *next)
}

// testClaimRunsTakesManyAtOnce: one call claims up to its limit, oldest
// first, only due runs, one per conversation, and the next call the rest.
func testClaimRunsTakesManyAtOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	for i := range 5 {
		b.inbound(t, fmt.Sprintf("c%d", i), "hi", b.at(time.Duration(i)*time.Second), true)
	}
	b.inbound(t, "later", "hi", b.at(time.Minute), true)
	now := b.at(10 * time.Second)

	none, err := b.st.ClaimRuns(b.ctx, "w1", now, 3, discord)
	require.NoError(t, err)
	require.Empty(t, none, "no due run on that platform")

	first, err := b.st.ClaimRuns(b.ctx, "w1", now, 3)
	require.NoError(t, err)
	require.Len(t, first, 3)
	rest, err := b.st.ClaimRuns(b.ctx, "w2", now, 3, telegram)
	require.NoError(t, err)
	require.Len(t, rest, 2, "the run due later stays queued")
	var threads []string
	for _, r := range append(first, rest...) {
		require.Equal(t, core.RunRunning, r.Status)
		c, err := b.st.Conversation(b.ctx, r.ConversationID)
		require.NoError(t, err)
		threads = append(threads, c.ChannelThreadID)
	}
	require.Equal(t, []string{"c0", "c1", "c2", "c3", "c4"}, threads, "oldest first")
	require.Equal(t, "w1", first[0].Owner)
	require.Equal(t, "w2", rest[0].Owner)
	require.Equal(t, int64(5), b.count(t, "runs", "status = 'running'"))
}

func testHeartbeat(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "chat-1", "w1", b.t0)

	stop, err := b.st.HeartbeatRuns(b.ctx, "w1", b.at(10*time.Second), []int64{run.ID})
	require.NoError(t, err)
	require.Empty(t, stop)
	got, err := b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, b.at(10*time.Second), *got.HeartbeatAt)

	stop, err = b.st.HeartbeatRuns(b.ctx, "w2", b.at(20*time.Second), []int64{run.ID})
	require.NoError(t, err)
	require.Equal(t, []int64{run.ID}, stop, "not w2's: it must stop")
	got, err = b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, b.at(10*time.Second), *got.HeartbeatAt, "a foreign heartbeat writes nothing")

	stop, err = b.st.HeartbeatRuns(b.ctx, "w1", b.t0, []int64{99999})
	require.NoError(t, err)
	require.Equal(t, []int64{99999}, stop, "an unknown run must stop too")
}

func testCompleteNonOwner(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "chat-1", "w1", b.t0)

	reply := &core.Message{Role: core.RoleAssistant, Source: core.SourceReply, Content: "not mine"}
	err := b.st.CompleteRun(b.ctx, run.ID, "intruder", core.RunCompletion{
		Status:   core.RunSucceeded,
		Messages: []*core.Message{reply},
		Record:   core.RunRecord{Output: "x"},
		Now:      b.at(time.Second),
	})
	require.ErrorIs(t, err, core.ErrLostRun)
	require.Zero(t, reply.ID, "the caller's message is untouched")
	require.Zero(t, reply.Seq)

	got, err := b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, *run, got, "the run is unchanged")
	require.Equal(t, int64(1), b.count(t, "messages", "conversation_id = ?", run.ConversationID), "no message was written")
	var lastSeq int64
	require.NoError(t, b.st.DB().Raw(`SELECT last_seq FROM conversations WHERE id = ?`, run.ConversationID).Row().Scan(&lastSeq))
	require.Equal(t, int64(1), lastSeq, "no seq was consumed")

	// A finished run cannot be finished again, even by its owner.
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(time.Second)}))
	err = b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{Status: core.RunFailed, Now: b.at(2 * time.Second)})
	require.ErrorIs(t, err, core.ErrLostRun)
	got, err = b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunSucceeded, got.Status)
}

func testCompleteAppendsReply(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "chat-1", "w1", b.t0)
	b.inbound(t, "chat-1", "meanwhile", b.at(time.Second), false)

	reply := &core.Message{
		Role: core.RoleAssistant, Source: core.SourceReply, Content: "hello there",
		PlatformMessageID: "tg-9", Metadata: map[string]any{"platform_message_ids": []any{"tg-9", "tg-10"}},
	}
	note := &core.Message{Role: core.RoleTool, Source: core.SourceSystem, Content: "tool said", CreatedAt: b.at(4 * time.Second)}
	record := core.RunRecord{
		PromptID: "companion", PromptVersion: "3", Rounds: 2, Output: "hello there",
		Prompt:    []core.RecordMessage{{Role: "system", Content: "be kind"}, {Role: "user", Content: "hi"}},
		ToolCalls: []core.ToolCallRecord{{ID: "call-1", Name: "remember", Arguments: `{"fact":"x"}`, Result: "ok", IsError: true}},
	}
	err := b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{
		Status: core.RunFailed, Error: "llm: boom", Messages: []*core.Message{reply, note},
		Record: record, PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120,
		Now: b.at(5 * time.Second),
	})
	require.NoError(t, err)

	require.NotZero(t, reply.ID)
	require.Equal(t, int64(3), reply.Seq, "the reply follows the last message")
	require.Equal(t, int64(4), note.Seq)
	require.Equal(t, run.ConversationID, reply.ConversationID)
	require.Equal(t, run.ID, *reply.RunID)
	require.Equal(t, run.ID, *note.RunID)
	require.Equal(t, b.at(5*time.Second), reply.CreatedAt, "CreatedAt defaults to the completion time")
	require.Equal(t, b.at(4*time.Second), note.CreatedAt, "a given CreatedAt is kept")

	msgs, err := b.st.Messages(b.ctx, run.ConversationID)
	require.NoError(t, err)
	require.Len(t, msgs, 4)
	require.Equal(t, *reply, msgs[2])
	require.Equal(t, *note, msgs[3])

	got, err := b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunFailed, got.Status)
	require.Equal(t, "llm: boom", got.Error)
	require.Equal(t, b.at(5*time.Second), *got.FinishedAt)
	require.Equal(t, record, got.Record)
	require.Equal(t, 100, got.PromptTokens)
	require.Equal(t, 20, got.CompletionTokens)
	require.Equal(t, 120, got.TotalTokens)
	require.Equal(t, "w1", got.Owner)

	next := b.inbound(t, "chat-1", "after", b.at(6*time.Second), false)
	require.Equal(t, int64(5), next.Message.Seq)
}

func testCompleteNonFinal(t *testing.T, open Opener) {
	b := setup(t, open)
	run := b.claimed(t, "chat-1", "w1", b.t0)
	err := b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{Status: core.RunQueued, Now: b.t0})
	require.ErrorContains(t, err, "not final")
	got, err := b.st.Run(b.ctx, run.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunRunning, got.Status)
}

func testReapStale(t *testing.T, open Opener) {
	b := setup(t, open)
	stale := b.claimed(t, "stale", "w1", b.t0)
	fresh := b.claimed(t, "fresh", "w2", b.t0)
	stop, err := b.st.HeartbeatRuns(b.ctx, "w2", b.at(time.Minute), []int64{fresh.ID})
	require.NoError(t, err)
	require.Empty(t, stop)
	queued := b.inbound(t, "waiting", "x", b.t0, true)

	n, retried, err := b.st.ReapStaleRuns(b.ctx, b.at(time.Minute), b.at(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 1, retried, "the unanswered turn is queued again")

	got, err := b.st.Run(b.ctx, stale.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunFailed, got.Status)
	require.True(t, strings.HasPrefix(got.Error, "stale: no heartbeat since "), got.Error)
	require.Contains(t, got.Error, "2030-03-04T05:06:07")
	require.NotNil(t, got.FinishedAt)

	got, err = b.st.Run(b.ctx, fresh.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunRunning, got.Status)
	got, err = b.st.Run(b.ctx, queued.Run.ID)
	require.NoError(t, err)
	require.Equal(t, core.RunQueued, got.Status, "queued runs are not reaped")

	stop, err = b.st.HeartbeatRuns(b.ctx, "w1", b.at(time.Minute), []int64{stale.ID})
	require.NoError(t, err)
	require.Equal(t, []int64{stale.ID}, stop, "a reaped run is no longer w1's")
	require.ErrorIs(t, b.st.CompleteRun(b.ctx, stale.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(time.Minute)}), core.ErrLostRun)

	n, retried, err = b.st.ReapStaleRuns(b.ctx, b.at(time.Minute), b.at(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, 0, retried)

	// The reaped conversation can run again.
	next := b.inbound(t, "stale", "retry", b.at(time.Minute), true)
	run, err := b.st.ClaimRun(b.ctx, "w3", b.at(2*time.Minute))
	require.NoError(t, err)
	require.NotNil(t, run)
	claimedIDs := []int64{run.ID}
	run, err = b.st.ClaimRun(b.ctx, "w3", b.at(2*time.Minute))
	require.NoError(t, err)
	require.NotNil(t, run)
	claimedIDs = append(claimedIDs, run.ID)
	require.ElementsMatch(t, []int64{next.Run.ID, queued.Run.ID}, claimedIDs)
}

// A user's turn whose process died is queued again when nothing else would
// answer the message, up to three deaths; one whose reply was stored, or
// with a run already queued behind it, is not.
func testReapStaleQueuesALoneTurnOnce(t *testing.T, open Opener) {
	b := setup(t, open)
	lone := b.claimed(t, "lone", "w1", b.t0)
	answered := b.claimed(t, "answered", "w1", b.t0)
	behind := b.claimed(t, "behind", "w1", b.t0)
	// The dead process had stored its reply in "answered"; "behind" has a
	// newer message waiting with its own run.
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: answered.ConversationID, Role: core.RoleAssistant,
		Content: "done", Source: core.SourceReply, CreatedAt: b.at(time.Second), Metadata: map[string]any{"answered_seq": 1}}))
	queued := b.inbound(t, "behind", "still there?", b.at(10*time.Second), true)

	n, retried, err := b.st.ReapStaleRuns(b.ctx, b.at(time.Minute), b.at(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Equal(t, 1, retried)

	runs, err := b.st.Runs(b.ctx, lone.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	retry := runs[1]
	require.Equal(t, core.RunQueued, retry.Status)
	require.Equal(t, core.RunUserTurn, retry.Kind)
	require.Equal(t, *lone.TriggerMessageID, *retry.TriggerMessageID, "the same message is answered")
	runs, err = b.st.Runs(b.ctx, answered.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 1, "the stored reply answered it")
	runs, err = b.st.Runs(b.ctx, behind.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 2, "the queued run answers both messages")
	require.Equal(t, queued.Run.ID, runs[1].ID)

	// The process that took both dies too: the retry is queued again; the
	// run that was queued in "behind" died for the first time.
	claimed := map[int64]bool{}
	for range 2 {
		r, err := b.st.ClaimRun(b.ctx, "w2", b.at(time.Minute))
		require.NoError(t, err)
		require.NotNil(t, r)
		claimed[r.ID] = true
	}
	require.True(t, claimed[retry.ID])
	n, retried, err = b.st.ReapStaleRuns(b.ctx, b.at(3*time.Minute), b.at(2*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 2, retried)
	runs, err = b.st.Runs(b.ctx, behind.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 3)
	require.Equal(t, core.RunQueued, runs[2].Status)
	require.Equal(t, *queued.Run.TriggerMessageID, *runs[2].TriggerMessageID)

	// A third death of the same message's turn is final: a message that
	// takes every process down is not tried for ever.
	r, err := b.st.ClaimRun(b.ctx, "w3", b.at(4*time.Minute))
	require.NoError(t, err)
	require.NotNil(t, r)
	if r.ConversationID != lone.ConversationID {
		r, err = b.st.ClaimRun(b.ctx, "w3", b.at(4*time.Minute))
		require.NoError(t, err)
		require.NotNil(t, r)
	}
	require.Equal(t, lone.ConversationID, r.ConversationID)
	_, _, err = b.st.ReapRunsOf(b.ctx, b.at(5*time.Minute), "w3")
	require.NoError(t, err)
	runs, err = b.st.Runs(b.ctx, lone.ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, 3, "queued again after its first two deaths")
	require.Equal(t, core.RunFailed, runs[2].Status)
}

// The crash of issue 30: "first" is answered while "second" waits in a
// queued run; the reply to "first" is stored after "second" (it answers
// seq 1, not what stands before it); the process dies while the queued
// turn is with the model. The reaper must queue "second" again: a reply
// answers up to its answered_seq, never up to its place.
func testReapStaleReadsAnsweredSeq(t *testing.T, open Opener) {
	b := setup(t, open)
	first := b.inbound(t, "q", "first", b.t0, true)
	run, err := b.st.ClaimRun(b.ctx, "w1", b.t0)
	require.NoError(t, err)
	require.Equal(t, first.Run.ID, run.ID)
	second := b.inbound(t, "q", "second", b.at(time.Second), true)
	require.NotNil(t, second.Run)
	reply := &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant, Content: "to first",
		Source: core.SourceReply, RunID: &run.ID, CreatedAt: b.at(2 * time.Second), Delivery: core.DeliverySent,
		Metadata: map[string]any{"answered_seq": first.Message.Seq}}
	require.NoError(t, b.st.AppendMessage(b.ctx, reply))
	require.Greater(t, reply.ID, second.Message.ID, "the reply is stored after the queued message")
	require.NoError(t, b.st.CompleteRun(b.ctx, run.ID, "w1", core.RunCompletion{Status: core.RunSucceeded, Now: b.at(2 * time.Second)}))
	queued, err := b.st.ClaimRun(b.ctx, "w1", b.at(3*time.Second))
	require.NoError(t, err)
	require.Equal(t, second.Run.ID, queued.ID)

	reaped, retried, err := b.st.ReapRunsOf(b.ctx, b.at(4*time.Second), "w1")
	require.NoError(t, err)
	require.Equal(t, 1, reaped)
	require.Equal(t, 1, retried, "second is still unanswered")
	runs, err := b.st.Runs(b.ctx, first.Conversation.ID)
	require.NoError(t, err)
	require.Len(t, runs, 3)
	require.Equal(t, core.RunQueued, runs[2].Status)
	require.Equal(t, second.Message.ID, *runs[2].TriggerMessageID)

	// Once a reply answers "second", a dead turn leaves nothing to queue;
	// a dropped reply, a failure notice without answered_seq and a
	// message held by a limit answer nothing and wait for nothing.
	again, err := b.st.ClaimRun(b.ctx, "w2", b.at(5*time.Second))
	require.NoError(t, err)
	require.NotNil(t, again)
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant,
		Content: "to second", Source: core.SourceReply, RunID: &again.ID, CreatedAt: b.at(6 * time.Second), Delivery: core.DeliverySent,
		Metadata: map[string]any{"answered_seq": second.Message.Seq}}))
	_, retried, err = b.st.ReapRunsOf(b.ctx, b.at(7*time.Second), "w2")
	require.NoError(t, err)
	require.Equal(t, 0, retried, "every message was answered")

	third := b.inbound(t, "q", "third", b.at(8*time.Second), true)
	last, err := b.st.ClaimRun(b.ctx, "w3", b.at(8*time.Second))
	require.NoError(t, err)
	require.Equal(t, third.Run.ID, last.ID)
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant,
		Content: "restarted", Source: core.SourceReply, RunID: &last.ID, CreatedAt: b.at(9 * time.Second), Delivery: core.DeliveryDropped,
		Metadata: map[string]any{"answered_seq": third.Message.Seq}}))
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: first.Conversation.ID, Role: core.RoleAssistant,
		Content: "Sorry, something went wrong.", Source: core.SourceReply, RunID: &last.ID, CreatedAt: b.at(9 * time.Second),
		Delivery: core.DeliverySent}))
	_, retried, err = b.st.ReapRunsOf(b.ctx, b.at(10*time.Second), "w3")
	require.NoError(t, err)
	require.Equal(t, 1, retried, "neither a dropped reply nor a failure notice answered third")

	// A message held by a limit after the dead turn's own was answered.
	b = setup(t, open)
	h := b.claimed(t, "h", "w5", b.at(11*time.Second))
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: h.ConversationID, Role: core.RoleAssistant,
		Content: "hello", Source: core.SourceReply, RunID: &h.ID, CreatedAt: b.at(11 * time.Second), Delivery: core.DeliverySent,
		Metadata: map[string]any{"answered_seq": 1}}))
	_, err = b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "h", ChannelUserID: "user-h",
		Text: "over the limit", Now: b.at(11 * time.Second), Metadata: map[string]any{"limited": "messages_per_minute"}})
	require.NoError(t, err)
	reaped, retried, err = b.st.ReapRunsOf(b.ctx, b.at(12*time.Second), "w5")
	require.NoError(t, err)
	require.Equal(t, 1, reaped)
	require.Equal(t, 0, retried, "a message held by a limit starts no turn")
}

// The messages a run's stream grew are recorded while it runs; when its
// process dies before its reply is stored, the reaper hands them to the
// turn it queues again, which deletes them before it answers. A run that
// stored its reply keeps them (the reply carries them), and another
// owner cannot record them.
func testReapHandsOnGrownMessages(t *testing.T, open Opener) {
	b := setup(t, open)
	half := b.claimed(t, "half", "w1", b.t0)
	replied := b.claimed(t, "replied", "w1", b.t0)
	require.NoError(t, b.st.NoteGrown(b.ctx, half.ID, "w1", []string{"m1"}))
	require.NoError(t, b.st.NoteGrown(b.ctx, half.ID, "w1", []string{"m1", "m2"}), "a second part grew")
	require.NoError(t, b.st.NoteGrown(b.ctx, half.ID, "w2", []string{"other"}), "not w2's: nothing recorded")
	require.NoError(t, b.st.NoteGrown(b.ctx, replied.ID, "w1", []string{"r1"}))
	got, err := b.st.Run(b.ctx, half.ID)
	require.NoError(t, err)
	require.Equal(t, []string{"m1", "m2"}, got.Grown)
	// "replied" stored its reply (sending) before the process died.
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: replied.ConversationID, Role: core.RoleAssistant,
		Content: "done", Source: core.SourceReply, RunID: &replied.ID, Delivery: core.DeliverySending, CreatedAt: b.at(time.Second)}))

	n, retried, err := b.st.ReapStaleRuns(b.ctx, b.at(time.Minute), b.at(30*time.Second))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 2, retried)
	byConv := map[int64]*core.Run{}
	for range 2 {
		run, err := b.st.ClaimRun(b.ctx, "w3", b.at(2*time.Minute))
		require.NoError(t, err)
		require.NotNil(t, run)
		byConv[run.ConversationID] = run
	}
	require.Equal(t, []string{"m1", "m2"}, byConv[half.ConversationID].Grown, "the retry deletes the half reply")
	require.Empty(t, byConv[replied.ConversationID].Grown, "the stored reply carries its own grown messages")

	// The retry deletes them and says so; its own stream records anew.
	retry := byConv[half.ConversationID]
	require.NoError(t, b.st.NoteGrown(b.ctx, retry.ID, "w3", nil))
	got, err = b.st.Run(b.ctx, retry.ID)
	require.NoError(t, err)
	require.Empty(t, got.Grown)
}
