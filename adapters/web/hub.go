package web

import (
	"context"
	"sync"
)

// subscriberBuffer is how many events may wait for one slow browser tab
// before it is disconnected.
const subscriberBuffer = 64

// event is one Server-Sent Event: its name ("message", "typing") and data.
type event struct {
	name string
	data []byte
}

// subscriber is one open event stream of one client.
type subscriber struct {
	thread string
	ch     chan event
	// gone is closed by the hub when it drops the subscriber (too slow, or
	// the adapter stopped); the stream handler then ends the response.
	gone chan struct{}
}

// hub fans events out to the open streams of each client. It never blocks
// a sender: a subscriber whose buffer is full is dropped.
type hub struct {
	mu     sync.Mutex
	closed bool
	subs   map[string]map[*subscriber]struct{}
	// streams counts subscribers whose handler has not returned yet, so
	// that close can wait for them. Add happens under mu while !closed,
	// which orders every Add before the Wait in wait.
	streams sync.WaitGroup
}

func newHub() *hub {
	return &hub{subs: map[string]map[*subscriber]struct{}{}}
}

// subscribe opens a stream for thread; false once the hub is closed. Every
// subscriber must be given back with leave.
func (h *hub) subscribe(thread string) (*subscriber, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	s := &subscriber{thread: thread, ch: make(chan event, subscriberBuffer), gone: make(chan struct{})}
	if h.subs[thread] == nil {
		h.subs[thread] = map[*subscriber]struct{}{}
	}
	h.subs[thread][s] = struct{}{}
	h.streams.Add(1)
	return s, true
}

// leave removes s (if still present) and marks its handler finished.
func (h *hub) leave(s *subscriber) {
	h.mu.Lock()
	h.dropLocked(s)
	h.mu.Unlock()
	h.streams.Done()
}

// dropLocked removes s and closes its gone channel, once.
func (h *hub) dropLocked(s *subscriber) {
	set, ok := h.subs[s.thread]
	if !ok {
		return
	}
	if _, ok := set[s]; !ok {
		return
	}
	delete(set, s)
	if len(set) == 0 {
		delete(h.subs, s.thread)
	}
	close(s.gone)
}

// publish queues evs, in order, on every stream of thread and returns how
// many streams got them. With dropSlow, a stream that cannot take them all
// is dropped (its page reconnects and reloads history); without it, such a
// stream just misses these events (fine for typing signals).
func (h *hub) publish(thread string, evs []event, dropSlow bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	delivered := 0
	for s := range h.subs[thread] {
		if len(s.ch)+len(evs) > cap(s.ch) {
			if dropSlow {
				h.dropLocked(s)
			}
			continue
		}
		// Only publish sends on s.ch and it holds mu, so the room
		// checked above is still there.
		for _, ev := range evs {
			s.ch <- ev
		}
		delivered++
	}
	return delivered
}

// close drops every stream and refuses new ones.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, set := range h.subs {
		for s := range set {
			h.dropLocked(s)
		}
	}
}

// wait blocks until every stream handler has returned, or ctx is done.
func (h *hub) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		h.streams.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
