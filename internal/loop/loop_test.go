package loop_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/internal/loop"
)

const waitFor = 5 * time.Second

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

// rounds counts a loop's rounds and lets a test wait for the next.
type rounds struct {
	mu    sync.Mutex
	n     int
	ch    chan int
	waits []time.Duration // what round i returns (the last one repeats)
}

func newRounds(waits ...time.Duration) *rounds {
	return &rounds{ch: make(chan int, 100), waits: waits}
}

func (r *rounds) step(context.Context) time.Duration {
	r.mu.Lock()
	r.n++
	n := r.n
	w := r.waits[min(n, len(r.waits))-1]
	r.mu.Unlock()
	r.ch <- n
	return w
}

func (r *rounds) next(t *testing.T) int {
	t.Helper()
	select {
	case n := <-r.ch:
		return n
	case <-time.After(waitFor):
		t.Fatal("no round ran")
		return 0
	}
}

func (r *rounds) none(t *testing.T) {
	t.Helper()
	select {
	case n := <-r.ch:
		t.Fatalf("round %d ran", n)
	default:
	}
}

func TestALoopRunsAtOnceThenWhenItsWaitIsOver(t *testing.T) {
	clock := coretest.NewClock(t0)
	r := newRounds(time.Second)
	l := loop.Start(context.Background(), clock, nil, r.step)
	defer l.Stop()
	require.Equal(t, 1, r.next(t))
	clock.WaitForTimer(t, t0.Add(time.Second), waitFor)
	clock.Advance(999 * time.Millisecond)
	r.none(t)
	clock.Advance(time.Millisecond)
	require.Equal(t, 2, r.next(t))
}

func TestAWakeRunsASleepingLoopAndCancelsItsTimer(t *testing.T) {
	clock := coretest.NewClock(t0)
	wake := core.NewWaker()
	r := newRounds(time.Hour)
	l := loop.Start(context.Background(), clock, wake, r.step)
	defer l.Stop()
	require.Equal(t, 1, r.next(t))
	clock.WaitForTimers(t, 1, waitFor)
	wake.Wake()
	require.Equal(t, 2, r.next(t))
	// The first sleep's timer is gone: only the second round's is left,
	// and moving past the first's time runs nothing.
	clock.WaitForTimer(t, clock.Now().Add(time.Hour), waitFor)
	clock.Advance(59 * time.Minute)
	r.none(t)
	clock.Advance(time.Minute)
	require.Equal(t, 3, r.next(t))
}

func TestAWakeDuringARoundRunsOneMoreRound(t *testing.T) {
	clock := coretest.NewClock(t0)
	wake := core.NewWaker()
	release := make(chan struct{})
	var n atomic.Int32
	entered := make(chan struct{}, 10)
	l := loop.Start(context.Background(), clock, wake, func(context.Context) time.Duration {
		entered <- struct{}{}
		if n.Add(1) == 1 {
			<-release
		}
		return loop.Forever
	})
	defer l.Stop()
	<-entered
	wake.Wake()
	wake.Wake() // several wakes during one round are one more round
	close(release)
	select {
	case <-entered:
	case <-time.After(waitFor):
		t.Fatal("the wake during the round was lost")
	}
	require.Eventually(t, func() bool { return n.Load() == 2 }, waitFor, time.Millisecond)
	// Stopped, the loop has run its rounds: two, not one a wake.
	l.Stop()
	<-l.Done()
	require.Equal(t, int32(2), n.Load(), "two wakes during a round ran two more rounds")
	require.Empty(t, entered)
}

func TestAZeroWaitRunsAgainAtOnceAndForeverWaitsForAWake(t *testing.T) {
	clock := coretest.NewClock(t0)
	wake := core.NewWaker()
	r := newRounds(0, 0, loop.Forever)
	l := loop.Start(context.Background(), clock, wake, r.step)
	defer l.Stop()
	for want := 1; want <= 3; want++ {
		require.Equal(t, want, r.next(t))
	}
	clock.Advance(24 * time.Hour)
	r.none(t)
	wake.Wake()
	require.Equal(t, 4, r.next(t))
}

func TestStopWaitsForTheRoundInProgressAndNoneStartsAfter(t *testing.T) {
	clock := coretest.NewClock(t0)
	wake := core.NewWaker()
	release := make(chan struct{})
	var rounds atomic.Int32
	entered := make(chan struct{}, 1)
	l := loop.Start(context.Background(), clock, wake, func(context.Context) time.Duration {
		if rounds.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
		return time.Second
	})
	<-entered
	l.Stop()
	select {
	case <-l.Done():
		t.Fatal("Done before the round returned")
	default:
	}
	close(release)
	<-l.Done()
	wake.Wake()
	clock.Advance(time.Hour)
	require.Equal(t, int32(1), rounds.Load())
}

func TestTheContextEndingStopsTheLoop(t *testing.T) {
	clock := coretest.NewClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	r := newRounds(time.Second)
	l := loop.Start(ctx, clock, nil, r.step)
	require.Equal(t, 1, r.next(t))
	cancel()
	select {
	case <-l.Done():
	case <-time.After(waitFor):
		t.Fatal("the loop did not stop with its context")
	}
	clock.Advance(time.Hour)
	r.none(t)
}

func TestManyWakesAndTimersNeverRunTwoRoundsAtOnce(t *testing.T) {
	clock := core.SystemClock{}
	wake := core.NewWaker()
	var inside, overlaps, total atomic.Int32
	l := loop.Start(context.Background(), clock, wake, func(context.Context) time.Duration {
		if inside.Add(1) > 1 {
			overlaps.Add(1)
		}
		total.Add(1)
		time.Sleep(10 * time.Microsecond)
		inside.Add(-1)
		return time.Microsecond
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				wake.Wake()
			}
		})
	}
	wg.Wait()
	l.Stop()
	<-l.Done()
	require.Zero(t, overlaps.Load())
	require.Positive(t, total.Load())
}
