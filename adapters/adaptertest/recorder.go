package adaptertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
)

// Recorder is a core.InboundHandler that keeps every message it is given,
// so a test can wait for the adapter to deliver them. It is safe for
// concurrent use.
type Recorder struct {
	mu   sync.Mutex
	msgs []core.InboundMessage
	// changed is closed, and replaced, whenever a message arrives, so any
	// number of waiters can watch it.
	changed chan struct{}
}

var _ core.InboundHandler = (*Recorder)(nil)

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{changed: make(chan struct{})}
}

// HandleInbound records msg and accepts it.
func (r *Recorder) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msg)
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// Messages returns a copy of what was received so far, in arrival order.
func (r *Recorder) Messages() []core.InboundMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.InboundMessage(nil), r.msgs...)
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
