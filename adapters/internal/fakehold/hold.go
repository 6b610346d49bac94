// Package fakehold lets a fake platform act on a call and then hold its
// answer, as a platform whose answer is slow to come back does: the
// message exists, and the client does not know it yet. A test kills the
// bot in that window to check a crashed send is not repeated more than
// the platform's guarantees allow.
package fakehold

import "sync"

// Holds are the answers held per call name (a method or a route).
type Holds struct {
	mu      sync.Mutex
	holding map[string]chan struct{}
	held    map[string]int
	// changed is called (without mu) when a call starts being held.
	changed func()
	// closed is the fake's: held calls end when it closes.
	closed <-chan struct{}
}

// New returns Holds that call changed whenever an answer starts being
// held, so that a fake's waiters look again, and end every held call
// unanswered once closed closes (the fake is shutting down).
func New(changed func(), closed <-chan struct{}) *Holds {
	return &Holds{changed: changed, closed: closed}
}

// Hold makes calls of name, from now on, act and then hold their answer
// until Release or until the client goes away.
func (h *Holds) Hold(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holding == nil {
		h.holding, h.held = map[string]chan struct{}{}, map[string]int{}
	}
	if _, ok := h.holding[name]; !ok {
		h.holding[name] = make(chan struct{})
	}
}

// Release answers the held calls of name and stops holding new ones.
func (h *Holds) Release(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.holding[name]; ok {
		close(ch)
		delete(h.holding, name)
	}
}

// Holding reports whether calls of name are held now.
func (h *Holds) Holding(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.holding[name]
	return ok
}

// Held is how many calls of name had their answer held so far.
func (h *Holds) Held(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held[name]
}

// Wait holds a call of name that has acted, when name is held: it returns
// true once released, false when gone closes first (the client went
// away; the answer is never written) or the fake closes.
func (h *Holds) Wait(name string, gone <-chan struct{}) bool {
	h.mu.Lock()
	ch, ok := h.holding[name]
	if ok {
		h.held[name]++
	}
	h.mu.Unlock()
	if !ok {
		return true
	}
	if h.changed != nil {
		h.changed()
	}
	select {
	case <-ch:
		return true
	case <-gone:
		return false
	case <-h.closed:
		return false
	}
}
