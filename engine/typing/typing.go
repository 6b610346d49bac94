// Package typing shows the platform's typing indicator while a turn
// works: from Delay into the turn, refreshed at the adapter's pace, on the
// clock's timers so that a turn waiting on the model holds no goroutine
// for it.
package typing

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

// Delay is how long a turn runs before the typing indicator shows: a
// reply that comes sooner needs none, and the turn saves the round trip.
// Users do not notice the indicator missing for this long; models take
// seconds.
const Delay = 400 * time.Millisecond

// Indicator shows the typing indicator for turns. Busy counts its timers
// armed and its calls in flight: the turns engine's Stop waits for them.
type Indicator struct {
	Clock core.Clock
	// Every is how often the indicator is refreshed, where the adapter
	// does not say (core.Capabilities.TypingRefresh).
	Every time.Duration
	Busy  *sync.WaitGroup
	Log   *slog.Logger
}

// Show shows the typing indicator in thread through a, from Delay into
// the turn and refreshed, until the returned func is called or ctx ends.
// Adapters without the capability show nothing.
func (s Indicator) Show(ctx context.Context, a core.Adapter, thread string) func() {
	ti, ok := a.(core.TypingIndicator)
	if !ok {
		return func() {}
	}
	every := s.Every
	if r := a.Capabilities().TypingRefresh; r > 0 {
		every = r
	}
	// The indicator runs on the clock's AfterFunc: a turn waiting on the
	// model holds no goroutine for it. Each armed timer and each call in
	// flight counts in s.turns, so Stop waits for a call that began. A
	// call in flight when the turn ends is let finish rather than
	// cancelled: cancelling an HTTP request closes its connection, and
	// the next reply would pay for a new one.
	callCtx := context.WithoutCancel(ctx)
	var (
		mu      sync.Mutex
		stopped bool
		timer   core.Timer
		show    func()
	)
	show = func() {
		defer s.Busy.Done()
		mu.Lock()
		if stopped || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		mu.Unlock()
		c, cancel := context.WithTimeout(callCtx, every)
		if err := ti.Typing(c, thread); err != nil {
			s.Log.Debug("typing indicator", "err", err)
		}
		cancel()
		mu.Lock()
		defer mu.Unlock()
		if !stopped && ctx.Err() == nil {
			s.Busy.Add(1)
			timer = core.AfterFunc(s.Clock, every, show)
		}
	}
	// Armed under mu like every re-arming: the timer may fire before the
	// assignment is done.
	mu.Lock()
	s.Busy.Add(1)
	timer = core.AfterFunc(s.Clock, Delay, show)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		if timer.Stop() {
			s.Busy.Done() // it will not run
		}
	}
}
