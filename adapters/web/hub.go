package web

import (
	"container/list"
	"context"
	"sync"
)

// subscriberBuffer is how many events may wait for one slow browser tab
// before it is disconnected.
const subscriberBuffer = 64

// event is one Server-Sent Event: its name ("message", "typing",
// "partial", "discard") and data.
type event struct {
	name string
	data []byte
	// key names the reply a partial belongs to: a newer partial of the
	// same reply takes the place of one still queued (see publishPartial).
	key string
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
	// gone is closed by the hub when it drops the subscriber (too slow,
	// evicted, or the adapter stopped); the stream handler then ends the
	// response.
	gone chan struct{}
	// ipElem is the subscriber's element in its address's list while it
	// counts against the caps; released is set when an eviction stopped
	// counting it before its handler left (both guarded by the hub's mu).
	ipElem   *list.Element
	released bool
	// evicted is set when the subscriber was ended to make room.
	evicted bool
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
// a sender: a subscriber whose queue is full is dropped. When every
// place is taken, a new stream takes the place of the oldest stream of
// the address holding the most, if that address holds at least two more
// than the newcomer's: one address, or a few, cannot keep everyone
// else's pages out, and addresses holding as many as each other do not
// evict each other in turn.
type hub struct {
	mu     sync.Mutex
	closed bool
	subs   map[string]map[*subscriber]struct{}
	// open counts the streams whose handler has not returned yet, in all,
	// per client and per address, for the caps. A stream counts from
	// subscribe to leave, even once dropped (its connection is open
	// until its handler returns), except one evicted: it stops counting
	// at once, since its place went to another.
	open      int
	perClient map[string]int
	perIP     map[string]int
	// byIP holds each address's counted streams, oldest first; holders
	// the addresses by how many streams they hold, and top the most any
	// holds, to find whom to evict without reading every address.
	byIP    map[string]*list.List
	holders map[int]map[string]struct{}
	top     int
	// evicted counts the streams evicted to make room.
	evicted int
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
		byIP:      map[string]*list.List{},
		holders:   map[int]map[string]struct{}{},
	}
}

// subscribe opens a stream for thread from address ip, within caps. Every
// admitted subscriber must be given back with leave. At the total cap it
// evicts the oldest stream of the address holding the most, when that
// address holds at least two more than ip (see hub); the evicted
// subscriber's gone is closed, and its page reconnects.
func (h *hub) subscribe(thread, ip string, caps streamCaps) (*subscriber, admission) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, hubClosed
	case caps.perClient > 0 && h.perClient[thread] >= caps.perClient:
		return nil, tooManyForClient
	case caps.perIP > 0 && h.perIP[ip] >= caps.perIP:
		return nil, tooManyForIP
	case caps.total > 0 && h.open >= caps.total:
		if h.top < h.perIP[ip]+2 {
			return nil, hubFull
		}
		h.evictLocked()
	}
	s := &subscriber{thread: thread, ip: ip, wake: make(chan struct{}, 1), gone: make(chan struct{})}
	if h.subs[thread] == nil {
		h.subs[thread] = map[*subscriber]struct{}{}
	}
	h.subs[thread][s] = struct{}{}
	h.open++
	h.perClient[thread]++
	h.countIPLocked(s)
	h.streams.Add(1)
	return s, admitted
}

// evictLocked ends the oldest stream of an address holding h.top
// streams, and stops counting it.
func (h *hub) evictLocked() {
	var ip string
	for ip = range h.holders[h.top] {
		break // any of them: they hold as many
	}
	s := h.byIP[ip].Front().Value.(*subscriber)
	s.evicted = true
	h.dropLocked(s)
	h.releaseLocked(s)
	h.evicted++
}

// wasEvicted reports whether s was ended to make room for another.
func (h *hub) wasEvicted(s *subscriber) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.evicted
}

// leave removes s (if still present) and marks its handler finished.
func (h *hub) leave(s *subscriber) {
	h.mu.Lock()
	h.dropLocked(s)
	h.releaseLocked(s)
	h.mu.Unlock()
	h.streams.Done()
}

// releaseLocked stops counting s against the caps, once.
func (h *hub) releaseLocked(s *subscriber) {
	if s.released {
		return
	}
	s.released = true
	h.open--
	decrement(h.perClient, s.thread)
	h.uncountIPLocked(s)
}

// countIPLocked counts s for its address: in perIP, in the address's
// list and among the holders.
func (h *hub) countIPLocked(s *subscriber) {
	n := h.perIP[s.ip]
	h.moveHolderLocked(s.ip, n, n+1)
	h.perIP[s.ip] = n + 1
	l := h.byIP[s.ip]
	if l == nil {
		l = list.New()
		h.byIP[s.ip] = l
	}
	s.ipElem = l.PushBack(s)
}

func (h *hub) uncountIPLocked(s *subscriber) {
	n := h.perIP[s.ip]
	h.moveHolderLocked(s.ip, n, n-1)
	decrement(h.perIP, s.ip)
	if l := h.byIP[s.ip]; l != nil && s.ipElem != nil {
		l.Remove(s.ipElem)
		s.ipElem = nil
		if l.Len() == 0 {
			delete(h.byIP, s.ip)
		}
	}
}

// moveHolderLocked moves ip from the holders of from streams to those of
// to, keeping top the most any address holds.
func (h *hub) moveHolderLocked(ip string, from, to int) {
	if set := h.holders[from]; set != nil {
		delete(set, ip)
		if len(set) == 0 {
			delete(h.holders, from)
		}
	}
	if to > 0 {
		if h.holders[to] == nil {
			h.holders[to] = map[string]struct{}{}
		}
		h.holders[to][ip] = struct{}{}
	}
	if to > h.top {
		h.top = to
	}
	for h.top > 0 && len(h.holders[h.top]) == 0 {
		h.top--
	}
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

// publishPartial queues ev, a partial reply, on every stream of thread
// and returns how many streams got it. A partial of the same reply still
// queued (a slow tab) is replaced in place, so a stream holds one partial
// per reply, however fast the reply grows. A stream with no room just
// misses it and is not dropped: the next partial carries the whole text,
// and the final message, which does drop a slow stream, follows anyway.
func (h *hub) publishPartial(thread string, ev event) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	delivered := 0
	for s := range h.subs[thread] {
		if replaceQueued(s.queue, ev) {
			delivered++ // the queue is not empty: its wake is pending or taken
			continue
		}
		if len(s.queue)+1 > subscriberBuffer {
			continue
		}
		s.queue = append(s.queue, ev)
		select {
		case s.wake <- struct{}{}:
		default:
		}
		delivered++
	}
	return delivered
}

// replaceQueued puts ev in place of the queued event with its key, and
// reports whether there was one.
func replaceQueued(queue []event, ev event) bool {
	if ev.key == "" {
		return false
	}
	for i := range queue {
		if queue[i].key == ev.key {
			queue[i] = ev
			return true
		}
	}
	return false
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

// openStreams is how many streams are open (an evicted one no longer
// counts).
func (h *hub) openStreams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

// evictions is how many streams were evicted to make room.
func (h *hub) evictions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.evicted
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
