package outbox

import (
	"context"
	"fmt"
	"sync"

	"github.com/parleybot/parley/core"
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
// A slot is not held while a send waits out a 429 or a backoff
// (core.Sleep pauses it): the platform refused that attempt, so nothing
// is in doubt, and the platform's other sends go on meanwhile.

// DropsRepeats reports whether a's platform still remembers a scheduled
// send's key when a crash makes it go out again: a job lease after its
// claim, or a little later, so the window must be twice the lease.
func (o *Outbox) DropsRepeats(a core.Adapter) bool {
	return a.Capabilities().IdempotencyWindow >= 2*o.cfg.JobLease
}

// LogSendsInDoubt says, at start, which platforms' scheduled sends go
// max_sends_in_doubt at a time, and why a platform that drops repeats
// does not count as one here.
func (o *Outbox) LogSendsInDoubt() {
	for _, a := range o.adapters {
		w := a.Capabilities().IdempotencyWindow
		switch {
		case o.DropsRepeats(a):
		case w > 0:
			o.log.Warn("scheduler.job_lease is too long for the platform to drop a message sent again after a crash; "+
				"its scheduled sends go max_sends_in_doubt at a time (shorten job_lease to at most half the window to lift that)",
				"platform", a.Platform(), "job_lease", o.cfg.JobLease, "window", w, "max_sends_in_doubt", o.cfg.MaxSendsInDoubt)
		default:
			o.log.Debug("the platform cannot drop a repeated message: scheduled sends go max_sends_in_doubt at a time",
				"platform", a.Platform(), "max_sends_in_doubt", o.cfg.MaxSendsInDoubt)
		}
	}
}

// TakeSlot waits, while ctx lasts, for a doubt slot for a send to a,
// unless its platform drops a repeated key: then it returns nil at once.
// Give the slot back once the send's outcome is stored.
func (o *Outbox) TakeSlot(ctx context.Context, a core.Adapter) (*Slot, error) {
	if o.DropsRepeats(a) {
		return nil, nil
	}
	s := &Slot{slots: o.slotsOf(a.Platform())}
	if err := s.take(ctx); err != nil {
		return nil, fmt.Errorf("waiting for a send slot: %w", err)
	}
	return s, nil
}

// slotsOf returns platform p's doubt slots.
func (o *Outbox) slotsOf(p core.Platform) slots {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.doubt[p]
	if !ok {
		s = make(slots, o.cfg.MaxSendsInDoubt)
		o.doubt[p] = s
	}
	return s
}

// slots are a platform's doubt slots.
type slots chan struct{}

// Slot is one send's hold on its platform's doubt slots. A nil Slot holds
// nothing.
type Slot struct {
	slots slots
	mu    sync.Mutex
	held  bool
}

// In returns ctx carrying s, for core.Sleep to pause while an adapter
// waits out a 429.
func (s *Slot) In(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	return core.WithPauser(ctx, s)
}

func (s *Slot) take(ctx context.Context) error {
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

// Give gives the slot back; it reports whether it was held.
func (s *Slot) Give() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		return false
	}
	s.held = false
	<-s.slots
	return true
}

// Pause gives the slot back while a send waits; it returns what takes it
// again (nil when it was not held). It implements core.Pauser.
func (s *Slot) Pause() func(context.Context) error {
	if !s.Give() {
		return nil
	}
	return s.take
}
