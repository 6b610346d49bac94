// Package eventset remembers the Slack events handed to the core, so
// that Slack's retries reach it once.
package eventset

import (
	"slices"
	"sync"
	"time"
)

// State is what the adapter knows of an event id.
type State int

const (
	New State = iota
	InFlight
	Done
)

// Set remembers the events handed to the core, so that Slack's
// retries (the Events API retries a POST it got no 2xx for; Socket Mode
// redelivers an envelope whose ack it missed) reach the core once. It
// lives in memory: the ids of a process that restarts are gone, and a
// retry to the new process would be handled again.
type Set struct {
	ttl time.Duration
	max int

	mu     sync.Mutex
	events map[string]seen
}

type seen struct {
	done bool
	at   time.Time
}

// NewSet remembers events for ttl (Slack retries within an hour),
// holding at most max; past that the oldest are forgotten first.
func NewSet(ttl time.Duration, max int) *Set {
	return &Set{ttl: ttl, max: max, events: make(map[string]seen)}
}

// begin claims id for handling. It returns New when the caller
// should handle it (and then call finish or forget), InFlight when
// another delivery is being handled, and Done when it was handled.
func (s *Set) Begin(id string, now time.Time) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.events[id]; ok && now.Sub(e.at) < s.ttl {
		if e.done {
			return Done
		}
		return InFlight
	}
	if len(s.events) >= s.max {
		s.evictLocked(now)
	}
	s.events[id] = seen{at: now}
	return New
}

// finish records id as handled.
func (s *Set) Finish(id string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[id] = seen{done: true, at: now}
}

// forget drops id, so that its next delivery is handled.
func (s *Set) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.events, id)
}

// evictLocked drops expired ids and, if the set is still full, the oldest
// half: a scan now and then is cheaper than ordering every insert.
func (s *Set) evictLocked(now time.Time) {
	for id, e := range s.events {
		if now.Sub(e.at) >= s.ttl {
			delete(s.events, id)
		}
	}
	if len(s.events) < s.max {
		return
	}
	times := make([]time.Time, 0, len(s.events))
	for _, e := range s.events {
		times = append(times, e.at)
	}
	slices.SortFunc(times, time.Time.Compare)
	cutoff := times[len(times)/2]
	for id, e := range s.events {
		if !e.at.After(cutoff) {
			delete(s.events, id)
		}
	}
}
