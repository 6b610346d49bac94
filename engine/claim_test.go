package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
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
