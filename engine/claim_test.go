package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
)

// A turn waits on the model nearly all its time, so turns of different
// conversations are not bounded by a few worker slots: every user who
// writes at once has a model request in flight at once.
func TestManyTurnsWaitOnTheModelAtOnce(t *testing.T) {
	t.Parallel()
	const users = 60
	b := setup(t, setupOpts{})
	release := make(chan struct{})
	for range users {
		b.model.Enqueue(llmtest.Text("answer").WithHold(release))
	}
	for i := range users {
		require.NoError(t, b.adapter.Deliver(b.ctx, fmt.Sprintf("u%d", i), "hello"))
	}
	// All held answers' requests arrive before any is released.
	b.model.WaitRequests(t, users, waitFor)
	close(release)
	b.adapter.WaitSent(t, users, waitFor)
}

// An idle claim loop sleeps until the next run it could claim is due, not
// until its poll because the earliest queued run waits behind its
// conversation's running turn (issue 20: a replica idled a whole poll
// while due runs waited).
func TestIdleLoopIsNotHeldByARunQueuedBehindARunningTurn(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	b := setup(t, setupOpts{clock: clock, debounce: time.Second, poll: time.Hour})
	release := make(chan struct{})
	b.model.Enqueue(llmtest.Text("first to x").WithHold(release), llmtest.Text("to y"), llmtest.Text("second to x"))

	require.NoError(t, b.adapter.Deliver(b.ctx, "x", "one"))
	clock.WaitForTimer(t, t0.Add(time.Second), waitFor)
	clock.Advance(time.Second)
	b.model.WaitRequests(t, 1, waitFor) // x's turn waits on the model

	// x writes again: its run is queued behind the running one and falls
	// due while that still runs.
	require.NoError(t, b.adapter.Deliver(b.ctx, "x", "two"))
	clock.Advance(time.Second)
	require.NoError(t, b.adapter.Deliver(b.ctx, "y", "hi"))

	// The loop wakes when y's debounce ends, an hour before its poll.
	clock.WaitForTimer(t, clock.Now().Add(time.Second), waitFor)
	clock.Advance(time.Second)
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "y", sent[0].ChannelThreadID)
	require.Equal(t, "to y", sent[0].Text)

	close(release)
	b.adapter.WaitSent(t, 3, waitFor)
	require.Equal(t, []string{"to y", "first to x", "second to x"}, sentTexts(b.adapter))
}

// loopClaims counts the runs the claim loop's claims took.
type loopClaims struct {
	core.Store
	n atomic.Int64
}

func (s *loopClaims) ClaimRuns(ctx context.Context, owner string, now time.Time, limit int, platforms ...core.Platform) ([]*core.Run, error) {
	runs, err := s.Store.ClaimRuns(ctx, owner, now, limit, platforms...)
	s.n.Add(int64(len(runs)))
	return runs, err
}

// A message whose turn is due at once (no debounce) and finds a free turn
// slot has its run claimed as it is stored and answered without the claim
// loop (issue 31's turn cost); the run is recorded as any other.
func TestADueTurnStartsAsItsMessageIsStored(t *testing.T) {
	t.Parallel()
	claims := &loopClaims{}
	b := setup(t, setupOpts{poll: time.Hour, wrapStore: func(st *store.Store) core.Store { claims.Store = st; return claims }})
	b.model.Enqueue(llmtest.Text("hi x"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "x", "hello"))
	sent := b.adapter.WaitSent(t, 1, waitFor)
	require.Equal(t, "hi x", sent[0].Text)
	run := b.waitRun(t, "x")
	require.Equal(t, core.RunSucceeded, run.Status)
	require.NotEmpty(t, run.Owner)
	require.Zero(t, claims.n.Load(), "the claim loop took no run")
}

// With every turn slot busy, a message's run is left queued, and taken
// when a slot frees: MaxTurns still bounds the turns in flight.
func TestADueTurnWithNoFreeSlotWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{workers: 1})
	release := make(chan struct{})
	b.model.Enqueue(llmtest.Text("to x").WithHold(release), llmtest.Text("to y"))
	require.NoError(t, b.adapter.Deliver(b.ctx, "x", "one"))
	b.model.WaitRequests(t, 1, waitFor) // x's turn holds the one slot

	require.NoError(t, b.adapter.Deliver(b.ctx, "y", "two"))
	conv, err := b.store.ConversationByThread(b.ctx, web, "y")
	require.NoError(t, err)
	runs, err := b.store.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, core.RunQueued, runs[0].Status, "no slot was free: y's run waits")

	close(release)
	b.adapter.WaitSent(t, 2, waitFor)
	require.Equal(t, []string{"to x", "to y"}, sentTexts(b.adapter))
	require.Equal(t, core.RunSucceeded, b.waitRun(t, "y").Status)
}
