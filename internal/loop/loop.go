// Package loop runs a background loop (claim due work, sleep until the
// next is due or something wakes it) without a goroutine of its own
// while it sleeps: its sleep is a timer on the clock and its wake a
// callback. A process with a hundred bots then keeps no four hundred
// goroutines parked on timers, and a loop that is woken or whose time
// comes runs its step on a goroutine that lives only as long as the step.
package loop

import (
	"context"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

// Forever is the wait a step returns to sleep until it is woken.
const Forever time.Duration = -1

// Step does one round of a loop's work and says how long to sleep before
// the next: 0 runs the next round at once, Forever sleeps until a Wake.
// A step runs on one goroutine at a time; ctx ends when the loop stops.
type Step func(ctx context.Context) (wait time.Duration)

// Loop is a running loop.
type Loop struct {
	ctx   context.Context
	clock core.Clock
	step  Step

	mu      sync.Mutex
	running bool // a goroutine runs the step now
	again   bool // woken while running: run again at once
	stopped bool
	timer   core.Timer
	// gen tells a timer that fired from the one armed last: a timer
	// stopped too late must not run the step a second time.
	gen     uint64
	done    chan struct{}
	stopCtx func() bool
}

// Start runs step at once and then whenever its wait is over or wake is
// woken, until ctx ends or Stop is called. Every Wake of wake goes to this
// loop from now on (core.Waker.OnWake); wake may be nil.
func Start(ctx context.Context, clock core.Clock, wake *core.Waker, step Step) *Loop {
	l := &Loop{ctx: ctx, clock: clock, step: step, running: true, done: make(chan struct{})}
	if wake != nil {
		wake.OnWake(l.Wake)
	}
	l.stopCtx = context.AfterFunc(ctx, l.Stop)
	go l.run()
	return l
}

// Wake runs the step now, or once more right after the round in progress.
func (l *Loop) Wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	if l.running {
		l.again = true
		return
	}
	l.disarm()
	l.running = true
	go l.run()
}

// Stop stops the loop: no round starts after it. Done is closed once the
// round in progress, if any, has returned.
func (l *Loop) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return
	}
	l.stopped = true
	l.stopCtx()
	l.disarm()
	if !l.running {
		close(l.done)
	}
}

// Done is closed when the loop has stopped and no round runs.
func (l *Loop) Done() <-chan struct{} { return l.done }

// run runs rounds until one asks to sleep.
func (l *Loop) run() {
	for {
		wait := l.step(l.ctx)
		l.mu.Lock()
		switch {
		case l.stopped:
			l.running = false
			close(l.done)
		case l.again || wait == 0:
			l.again = false
			l.mu.Unlock()
			continue
		default:
			l.running = false
			if wait > 0 {
				l.gen++
				gen := l.gen
				l.timer = core.AfterFunc(l.clock, wait, func() { l.fire(gen) })
			}
		}
		l.mu.Unlock()
		return
	}
}

// fire runs the step when the timer armed as gen fires.
func (l *Loop) fire(gen uint64) {
	l.mu.Lock()
	if l.stopped || l.running || gen != l.gen {
		l.mu.Unlock()
		return
	}
	l.timer = nil
	l.running = true
	l.mu.Unlock()
	l.run() // AfterFunc calls fire on a goroutine of its own
}

// disarm stops the sleep's timer; l.mu is held.
func (l *Loop) disarm() {
	l.gen++
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}
