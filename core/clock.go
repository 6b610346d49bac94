package core

import (
	"context"
	"time"
)

// Clock tells the time and makes timers. Logic reads time and waits only
// through a Clock so tests can control both (coretest.Clock).
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that fires once, d from now.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer made by a Clock.
type Timer interface {
	// C delivers the time when the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

// AfterFunc runs f on its own goroutine d from now.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer {
	return systemTimer{time.AfterFunc(d, f)}
}

// afterFuncClock is a Clock that runs a function d from now with no
// goroutine waiting meanwhile (SystemClock and coretest.Clock are): a
// thousand turns waiting on the model then hold no thousand goroutines
// for their typing indicators.
type afterFuncClock interface {
	AfterFunc(d time.Duration, f func()) Timer
}

// AfterFunc runs f on its own goroutine d from now on clock. Its Timer's
// Stop reports whether it stopped f from running; its C is not used.
func AfterFunc(clock Clock, d time.Duration, f func()) Timer {
	if c, ok := clock.(afterFuncClock); ok {
		return c.AfterFunc(d, f)
	}
	t := &waitingTimer{t: clock.NewTimer(d), stop: make(chan struct{})}
	go func() {
		select {
		case <-t.t.C():
			f()
		case <-t.stop:
		}
	}()
	return t
}

// waitingTimer is AfterFunc's timer on a Clock without AfterFunc.
type waitingTimer struct {
	t    Timer
	stop chan struct{}
}

func (w *waitingTimer) C() <-chan time.Time { return nil }

func (w *waitingTimer) Stop() bool {
	if !w.t.Stop() {
		return false
	}
	close(w.stop)
	return true
}

type systemTimer struct{ t *time.Timer }

func (s systemTimer) C() <-chan time.Time { return s.t.C }
func (s systemTimer) Stop() bool          { return s.t.Stop() }

// Sleep waits d on clock; it reports false when ctx ended first. An
// adapter waits out a 429 or a backoff with it: what the send holds (the
// Outbox's doubt slot, a Pauser in ctx) is let go meanwhile and taken
// again after.
func Sleep(ctx context.Context, clock Clock, d time.Duration) bool {
	var resume func(context.Context) error
	if p, ok := ctx.Value(pauserKey{}).(Pauser); ok {
		resume = p.Pause()
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
	}
	return resume == nil || resume(ctx) == nil
}

// Pauser is something a send holds that may be let go while it waits (the
// Outbox's doubt slot: nothing is in doubt while a platform has refused
// the attempt).
type Pauser interface {
	// Pause lets go of what is held; it returns what takes it again, nil
	// when nothing was held.
	Pause() func(context.Context) error
}

type pauserKey struct{}

// WithPauser returns ctx carrying p, for Sleep.
func WithPauser(ctx context.Context, p Pauser) context.Context {
	return context.WithValue(ctx, pauserKey{}, p)
}
