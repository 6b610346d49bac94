// Package pacetest helps test an adapter's send pace (adapters/pace) on a
// clock the test moves: step the sends one slot at a time and check the
// times they reached a fake platform.
package pacetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// waitFor bounds every wait on the code under test (wall time).
const waitFor = 10 * time.Second

// Clock is a coretest.Clock that remembers when its timers are due, so
// that a test can move time straight to the next one: the pacer's next
// slot, whatever margin the pacer keeps under the platform's rate.
type Clock struct {
	*coretest.Clock
	mu  sync.Mutex
	due []time.Time
}

// NewClock returns a Clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{Clock: coretest.NewClock(t)} }

// NewTimer returns a timer firing d from now and remembers when.
func (c *Clock) NewTimer(d time.Duration) core.Timer {
	c.mu.Lock()
	c.due = append(c.due, c.Now().Add(d))
	c.mu.Unlock()
	return c.Clock.NewTimer(d)
}

// AdvanceToNext moves the clock to the earliest timer due after now. Call
// it only while the sends are asleep on the clock (WaitForTimer), so that
// no timer is being made meanwhile.
func (c *Clock) AdvanceToNext(t testing.TB) {
	t.Helper()
	now := c.Now()
	var next time.Time
	c.mu.Lock()
	for _, d := range c.due {
		if d.After(now) && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	c.mu.Unlock()
	require.False(t, next.IsZero(), "no timer to move the clock to")
	c.Advance(next.Sub(now))
}

// StepSlots lets the requests from..to (counted by count, what the fake
// has seen) go one slot at a time: while the next waits on the clock none
// went early; moved to its slot, it goes.
func StepSlots(t testing.TB, clock *Clock, count func() int, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		clock.WaitForTimer(t, clock.Now().Add(2*time.Second), waitFor)
		require.Equal(t, i, count(), "request %d went before its slot", i+1)
		clock.AdvanceToNext(t)
		require.Eventually(t, func() bool { return count() > i }, waitFor, time.Millisecond,
			"request %d did not go at its slot", i+1)
	}
}

// RequirePaced checks the times requests reached a fake: the first burst
// at t0, then each at least every after the one before (the platform's
// rate) and within a quarter of every more (the pacer's margin under it,
// not a stall).
func RequirePaced(t testing.TB, at []time.Time, t0 time.Time, burst int, every time.Duration) {
	t.Helper()
	for i, ti := range at {
		if i < burst {
			require.Equal(t, t0, ti, "request %d is in the burst", i+1)
			continue
		}
		gap := ti.Sub(at[i-1])
		require.GreaterOrEqual(t, gap, every, "request %d after %v", i+1, gap)
		require.Less(t, gap, every+every/4, "request %d after %v", i+1, gap)
	}
}

// Go runs send in a goroutine; the channel gets its error. The send's
// context ends with the test, so it does not outlive it.
func Go(t testing.TB, send func(ctx context.Context) error) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- send(ctx) }()
	return done
}

// Await returns what done delivers, failing t after a while.
func Await(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitFor):
		t.Fatal("pacetest: the sends did not finish")
		return nil
	}
}
