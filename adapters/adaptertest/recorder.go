package adaptertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
)

// Recorder is a core.Host that keeps every message, tap, change and
// reaction it is given, so a test can wait for the adapter to deliver
// them. It is safe for concurrent use.
type Recorder struct {
	// No history, model health or commands: a host that takes messages.
	core.InboundOnly
	// TapAnswer, if set, is how HandleTap answers a tap (after recording
	// it); nil answers a plain acknowledgement (core.TapAnswer{}). Set it
	// before the adapter starts; to change answers during a test, make
	// the func read state it synchronises itself.
	TapAnswer func(core.InboundMessage) (core.TapAnswer, error)
	mu        sync.Mutex
	msgs      []core.InboundMessage
	// fail, while failTimes > 0 (or < 0: until cleared), is returned
	// instead of accepting a message, as a core whose database is down.
	fail      error
	failTimes int
	panicOn   string
	// taps, changes and reactions are what HandleTap, HandleChange and
	// HandleReaction were given, in order.
	taps      []core.InboundMessage
	changes   []core.MessageChange
	reactions []core.Reaction
	// changed is closed, and replaced, whenever anything arrives (a
	// message, a tap, a change, a reaction), so any number of waiters can
	// watch it.
	changed chan struct{}
}

var _ core.InboundHandler = (*Recorder)(nil)

var _ core.Host = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{changed: make(chan struct{})}
}

// FailWith makes every later HandleInbound fail with err, as a core that
// cannot store anything; FailWith(nil) accepts messages again. Taps,
// changes and reactions are still taken.
func (r *Recorder) FailWith(err error) { r.FailTimes(-1, err) }

// FailTimes makes the next n calls of HandleInbound fail with err.
func (r *Recorder) FailTimes(n int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail, r.failTimes = err, n
	if err == nil {
		r.failTimes = 0
	}
}

// PanicOn makes the handler panic on a message with exactly this text, to
// prove an adapter survives a core that panics.
func (r *Recorder) PanicOn(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.panicOn = text
}

// HandleInbound records msg and accepts it, unless told to fail or panic.
func (r *Recorder) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.panicOn != "" && msg.Text == r.panicOn {
		panic("adaptertest: recorder told to panic")
	}
	if r.failTimes != 0 {
		if r.failTimes > 0 {
			r.failTimes--
		}
		return r.fail
	}
	r.msgs = append(r.msgs, msg)
	r.wake()
	return nil
}

// Messages returns a copy of what was received so far, in arrival order.
func (r *Recorder) Messages() []core.InboundMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.InboundMessage(nil), r.msgs...)
}

// Take returns what was received since the last Take and forgets it: a
// fuzz target looks at each input's messages alone.
func (r *Recorder) Take() []core.InboundMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.msgs
	r.msgs = nil
	return got
}

// Wait blocks until at least n messages have arrived and returns them all;
// it fails the test if that takes longer than timeout.
func (r *Recorder) Wait(t *testing.T, n int, timeout time.Duration) []core.InboundMessage {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		got, changed := len(r.msgs), r.changed
		r.mu.Unlock()
		if got >= n {
			return r.Messages()
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("adaptertest: waited %v for %d inbound message(s), got %d: %+v", timeout, n, got, r.Messages())
		}
	}
}

// HandleTap records a tap (core.TapHandler) and answers as TapAnswer
// says. Taps are kept apart from Messages.
func (r *Recorder) HandleTap(_ context.Context, msg core.InboundMessage) (core.TapAnswer, error) {
	r.mu.Lock()
	r.taps = append(r.taps, msg)
	r.wake()
	answer := r.TapAnswer
	r.mu.Unlock()
	if answer == nil {
		return core.TapAnswer{}, nil
	}
	return answer(msg)
}

// Taps returns a copy of the taps HandleTap was given, in order.
func (r *Recorder) Taps() []core.InboundMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.InboundMessage(nil), r.taps...)
}

// HandleChange records a user's edit or deletion (core.ChangeHandler).
func (r *Recorder) HandleChange(_ context.Context, c core.MessageChange) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c)
	r.wake()
	return nil
}

// Changes returns a copy of the changes HandleChange was given, in order.
func (r *Recorder) Changes() []core.MessageChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.MessageChange(nil), r.changes...)
}

// HandleReaction records a user's reaction (core.ReactionHandler).
func (r *Recorder) HandleReaction(_ context.Context, re core.Reaction) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reactions = append(r.reactions, re)
	r.wake()
	return nil
}

// Reactions returns a copy of the reactions HandleReaction was given, in
// order.
func (r *Recorder) Reactions() []core.Reaction {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.Reaction(nil), r.reactions...)
}

// WaitUntil blocks until cond (called without the Recorder's lock, so it
// may read Messages, Taps, Changes, Reactions) holds, looking again
// whenever something arrives; it fails the test after timeout, saying
// what it waited for.
func (r *Recorder) WaitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("adaptertest: waited %v for %s", timeout, what)
		}
	}
}

// wake wakes every waiter. Callers hold r.mu.
func (r *Recorder) wake() {
	close(r.changed)
	r.changed = make(chan struct{})
}
