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
	ip     string
	// queue holds the events not yet written, guarded by the hub's mu.
	// It is nil while the stream is idle, so an idle stream holds no
	// buffer, only its channels.
	queue []event
	// wake has room for one signal, left by publish after it queues: the
	// stream handler then takes the whole queue.
	wake chan struct{}
	// gone is closed by the hub when it drops the subscriber (too slow, or
	// the adapter stopped); the stream handler then ends the response.
	gone chan struct{}
}

// streamCaps bound the open streams of one client, of one address and in
// all; 0 is no bound.
type streamCaps struct{ perClient, perIP, total int }

// admission is subscribe's verdict.
type admission int

const (
	admitted admission = iota
	hubClosed
	tooManyForClient
	tooManyForIP
	hubFull
)

// hub fans events out to the open streams of each client. It never blocks
// a sender: a subscriber whose queue is full is dropped.
type hub struct {
	mu     sync.Mutex
	closed bool
	subs   map[string]map[*subscriber]struct{}
	// open counts the streams whose handler has not returned yet, in all,
	// per client and per address, for the caps. A stream counts from
	// subscribe to leave, even once dropped: its connection is open until
	// its handler returns.
	open      int
	perClient map[string]int
	perIP     map[string]int
	// streams counts the same handlers, so that close can wait for them.
	// Add happens under mu while !closed, which orders every Add before
	// the Wait in wait.
	streams sync.WaitGroup
}

func newHub() *hub {
	return &hub{
		subs:      map[string]map[*subscriber]struct{}{},
		perClient: map[string]int{},
		perIP:     map[string]int{},
	}
}

// subscribe opens a stream for thread from address ip, within caps. Every
// admitted subscriber must be given back with leave.
func (h *hub) subscribe(thread, ip string, caps streamCaps) (*subscriber, admission) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, hubClosed
	case caps.total > 0 && h.open >= caps.total:
		return nil, hubFull
	case caps.perClient > 0 && h.perClient[thread] >= caps.perClient:
		return nil, tooManyForClient
	case caps.perIP > 0 && h.perIP[ip] >= caps.perIP:
		return nil, tooManyForIP
	}
	s := &subscriber{thread: thread, ip: ip, wake: make(chan struct{}, 1), gone: make(chan struct{})}
	if h.subs[thread] == nil {
		h.subs[thread] = map[*subscriber]struct{}{}
	}
	h.subs[thread][s] = struct{}{}
	h.open++
	h.perClient[thread]++
	h.perIP[ip]++
	h.streams.Add(1)
	return s, admitted
}

// leave removes s (if still present) and marks its handler finished.
func (h *hub) leave(s *subscriber) {
	h.mu.Lock()
	h.dropLocked(s)
	h.open--
	decrement(h.perClient, s.thread)
	decrement(h.perIP, s.ip)
	h.mu.Unlock()
	h.streams.Done()
}

// decrement lowers m[k], deleting it at zero so the maps hold only keys
// with open streams.
func decrement(m map[string]int, k string) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
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
	s.queue = nil
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
		if len(s.queue)+len(evs) > subscriberBuffer {
			if dropSlow {
				h.dropLocked(s)
			}
			continue
		}
		s.queue = append(s.queue, evs...)
		select {
		case s.wake <- struct{}{}:
		default: // a wake is pending: the handler takes this too
		}
		delivered++
	}
	return delivered
}

// take returns the events queued for s, oldest first, and empties its
// queue.
func (h *hub) take(s *subscriber) []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	evs := s.queue
	s.queue = nil
	return evs
}

// openStreams is how many streams are open.
func (h *hub) openStreams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
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
