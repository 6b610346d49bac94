// Package fair bounds requests in flight across several lanes (the bots
// sharing a model account), handing freed slots to the lanes in turn.
package fair

import (
	"context"
	"slices"
	"sync"
)

// Slots bounds the requests in flight of every client sharing a provider
// account (llm.Config.MaxConcurrency), and hands a freed slot to the
// clients' lanes in turn: a bot whose thousand users wait for the model
// holds up another bot's one request by one request, not by a thousand.
// Within a lane, requests go in the order they came.
type Slots struct {
	mu   sync.Mutex
	free int
	// ring holds the lanes with requests waiting, served round robin from
	// next.
	ring []*Lane
	next int
}

// Lane is one client's queue for the shared slots (a bot's).
type Lane struct {
	waiting []chan struct{}
}

func New(n int) *Slots { return &Slots{free: n} }

// TryAcquire takes a slot if one is free and nobody waits for one.
func (s *Slots) TryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.free > 0 && len(s.ring) == 0 {
		s.free--
		return true
	}
	return false
}

// Acquire takes a slot for ln, waiting for its turn; it returns ctx's
// error if ctx ends first.
func (s *Slots) Acquire(ctx context.Context, ln *Lane) error {
	s.mu.Lock()
	if s.free > 0 && len(s.ring) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	if len(ln.waiting) == 0 {
		s.ring = append(s.ring, ln)
	}
	ln.waiting = append(ln.waiting, ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if i := slices.Index(ln.waiting, ch); i >= 0 {
		ln.waiting = slices.Delete(ln.waiting, i, i+1)
		if len(ln.waiting) == 0 {
			s.dropLocked(ln)
		}
		s.mu.Unlock()
		return ctx.Err()
	}
	s.mu.Unlock()
	// The slot came as ctx ended: pass it on.
	s.Release()
	return ctx.Err()
}

// Release frees a slot: to the next lane's oldest request, if any waits.
func (s *Slots) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ring) == 0 {
		s.free++
		return
	}
	if s.next >= len(s.ring) {
		s.next = 0
	}
	ln := s.ring[s.next]
	ch := ln.waiting[0]
	ln.waiting = ln.waiting[1:]
	if len(ln.waiting) == 0 {
		s.ring = slices.Delete(s.ring, s.next, s.next+1)
	} else {
		s.next++
	}
	ch <- struct{}{}
}

// dropLocked takes ln, whose queue is empty, off the ring.
func (s *Slots) dropLocked(ln *Lane) {
	i := slices.Index(s.ring, ln)
	if i < 0 {
		return
	}
	s.ring = slices.Delete(s.ring, i, i+1)
	if i < s.next {
		s.next--
	}
}
