package core

import (
	"context"
	"sync"
)

// A scheduled send is in doubt from its request until its job is recorded
// sent: should the process die in between, the job is claimed again after
// its lease and sent again. A platform that drops a repeated idempotency
// key for long enough (Capabilities.IdempotencyWindow) makes that
// harmless; on any other, each send in doubt at a crash is a duplicate the
// user sees. So sends to such a platform take a doubt slot, at most
// scheduler.max_sends_in_doubt per platform and process (default 4: at
// most four duplicates per crash, and at a 100 ms round trip enough sends
// at once for Telegram's 30 messages/s), held until the job is settled.
//
// A slot is not held while a send waits out a 429 or a backoff (Sleep
// gives it up): the platform refused that attempt, so nothing is in
// doubt, and the platform's other sends go on meanwhile.

// dropsRepeats reports whether a's platform still remembers a scheduled
// send's key when a crash makes it go out again: a job lease after its
// claim, or a little later, so the window must be twice the lease.
func (d *Dispatcher) dropsRepeats(a Adapter) bool {
	return a.Capabilities().IdempotencyWindow >= 2*d.cfg.JobLease
}

// logSendsInDoubt says, at start, which platforms' scheduled sends go
// max_sends_in_doubt at a time, and why a platform that drops repeats
// does not count as one here.
func (d *Dispatcher) logSendsInDoubt() {
	for _, a := range d.adapters {
		w := a.Capabilities().IdempotencyWindow
		switch {
		case d.dropsRepeats(a):
		case w > 0:
			d.log.Warn("scheduler.job_lease is too long for the platform to drop a message sent again after a crash; "+
				"its scheduled sends go max_sends_in_doubt at a time (shorten job_lease to at most half the window to lift that)",
				"platform", a.Platform(), "job_lease", d.cfg.JobLease, "window", w, "max_sends_in_doubt", d.cfg.MaxSendsInDoubt)
		default:
			d.log.Debug("the platform cannot drop a repeated message: scheduled sends go max_sends_in_doubt at a time",
				"platform", a.Platform(), "max_sends_in_doubt", d.cfg.MaxSendsInDoubt)
		}
	}
}

// doubtSlots are a platform's slots.
type doubtSlots chan struct{}

// doubtSlot is one send's hold on its platform's slots.
type doubtSlot struct {
	slots doubtSlots
	mu    sync.Mutex
	held  bool
}

type doubtKey struct{}

// takeDoubtSlot waits for a slot of slots while ctx lasts.
func takeDoubtSlot(ctx context.Context, slots doubtSlots) (*doubtSlot, error) {
	s := &doubtSlot{slots: slots}
	return s, s.take(ctx)
}

// in returns ctx carrying s, for Sleep to give up while it waits.
func (s *doubtSlot) in(ctx context.Context) context.Context {
	return context.WithValue(ctx, doubtKey{}, s)
}

func (s *doubtSlot) take(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	s.held = true
	s.mu.Unlock()
	return nil
}

// give gives the slot back; it reports whether it was held.
func (s *doubtSlot) give() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return false
	}
	s.held = false
	<-s.slots
	return true
}

// pauseDoubt gives up the doubt slot ctx carries, if any, and returns
// what takes it again (nil when there was none).
func pauseDoubt(ctx context.Context) func(context.Context) error {
	s, ok := ctx.Value(doubtKey{}).(*doubtSlot)
	if !ok || !s.give() {
		return nil
	}
	return s.take
}
