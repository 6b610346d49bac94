package slack

import (
	"slices"
	"sync"
	"time"
)

// eventState is what the adapter knows of an event id.
type eventState int

const (
	eventNew eventState = iota
	eventInFlight
	eventDone
)

// eventSet remembers the events handed to the core, so that Slack's
// retries (the Events API retries a POST it got no 2xx for; Socket Mode
// redelivers an envelope whose ack it missed) reach the core once. It
// lives in memory: the ids of a process that restarts are gone, and a
// retry to the new process would be handled again.
type eventSet struct {
	ttl time.Duration
	max int

	mu     sync.Mutex
	events map[string]seenEvent
}

type seenEvent struct {
	done bool
	at   time.Time
}

// newEventSet remembers events for ttl (Slack retries within an hour),
// holding at most max; past that the oldest are forgotten first.
func newEventSet(ttl time.Duration, max int) *eventSet {
	return &eventSet{ttl: ttl, max: max, events: make(map[string]seenEvent)}
}

// begin claims id for handling. It returns eventNew when the caller
// should handle it (and then call finish or forget), eventInFlight when
// another delivery is being handled, and eventDone when it was handled.
func (s *eventSet) begin(id string, now time.Time) eventState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.events[id]; ok && now.Sub(e.at) < s.ttl {
		if e.done {
			return eventDone
		}
		return eventInFlight
	}
	if len(s.events) >= s.max {
		s.evictLocked(now)
	}
	s.events[id] = seenEvent{at: now}
	return eventNew
}

// finish records id as handled.
func (s *eventSet) finish(id string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events[id] = seenEvent{done: true, at: now}
}

// forget drops id, so that its next delivery is handled.
func (s *eventSet) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.events, id)
}

// evictLocked drops expired ids and, if the set is still full, the oldest
// half: a scan now and then is cheaper than ordering every insert.
func (s *eventSet) evictLocked(now time.Time) {
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
