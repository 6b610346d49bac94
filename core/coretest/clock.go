package coretest

import (
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
)

// Clock is a core.Clock that moves only when told. Its timers fire when
// Advance or Set moves the time past their deadline.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	changed chan struct{}
}

var _ core.Clock = (*Clock)(nil)

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t, changed: make(chan struct{})} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer firing when the clock reaches now+d.
func (c *Clock) NewTimer(d time.Duration) core.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		t.fired = true
		return t
	}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

// AfterFunc runs f on its own goroutine when the clock reaches now+d.
func (c *Clock) AfterFunc(d time.Duration, f func()) core.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f}
	if d <= 0 {
		t.fired = true
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	c.notifyLocked()
	return t
}

// Advance moves the clock forward by d, firing due timers in deadline order.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	sort.SliceStable(c.timers, func(i, j int) bool { return c.timers[i].at.Before(c.timers[j].at) })
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.fired = true
			if t.f != nil {
				go t.f()
			} else {
				t.ch <- c.now
			}
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
	c.notifyLocked()
}

// WaitForTimer waits until some timer is due at or before deadline, so that
// a test advances the clock only once the code under test is waiting. It
// fails t after timeout (wall time).
func (c *Clock) WaitForTimer(t testing.TB, deadline time.Time, timeout time.Duration) {
	t.Helper()
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for {
		c.mu.Lock()
		for _, tm := range c.timers {
			if !tm.at.After(deadline) {
				c.mu.Unlock()
				return
			}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-limit.C:
			t.Fatalf("coretest: no timer due by %v after waiting %v", deadline, timeout)
		}
	}
}

// WaitForTimers waits until at least n timers are pending. A test that
// knows how many loops sleep on the clock when all is idle uses it after
// Advance: the due timers fired, and once n are armed again every loop
// has finished what the new time asked of it. It fails t after timeout
// (wall time).
func (c *Clock) WaitForTimers(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for {
		c.mu.Lock()
		have := len(c.timers)
		ch := c.changed
		c.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			t.Fatalf("coretest: %d timers pending after waiting %v, want %d", have, timeout, n)
		}
	}
}

func (c *Clock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	clock *Clock
	at    time.Time
	ch    chan time.Time // nil for AfterFunc's
	f     func()         // AfterFunc's function
	fired bool
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			c.notifyLocked()
			return true
		}
	}
	return false
}
