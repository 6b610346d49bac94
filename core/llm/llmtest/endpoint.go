package llmtest

import (
	"sync"
	"testing"
	"time"
)

// Endpoint is one of the server's media endpoints, Server.Speech or
// Server.Images: its scripted answers, taken in order, the responder that
// answers once they run out, and the requests it received. It is safe for
// concurrent use.
type Endpoint[Req any] struct {
	name string // for the error of an unscripted request

	mu        sync.Mutex
	queue     []MediaResponse
	responder func(Req) MediaResponse
	requests  []Req
	arrived   chan struct{} // closed and replaced on every new request
}

func newEndpoint[Req any](name string) *Endpoint[Req] {
	return &Endpoint[Req]{name: name, arrived: make(chan struct{})}
}

// Enqueue appends scripted answers; each request takes the next one. The
// queue is the endpoint's own, apart from the chat answers'.
func (e *Endpoint[Req]) Enqueue(rs ...MediaResponse) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queue = append(e.queue, rs...)
}

// Respond sets the responder used when the queue is empty (e.g.
// Generates); nil removes it. With neither a script nor a responder the
// endpoint answers 500 "llmtest: no scripted <name>", so a forgotten script
// fails loudly.
func (e *Endpoint[Req]) Respond(f func(Req) MediaResponse) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.responder = f
}

// Pending returns how many scripted answers have not been used yet.
func (e *Endpoint[Req]) Pending() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.queue)
}

// Requests returns every request received so far (those refused for their
// key or their fields included), in order of arrival.
func (e *Endpoint[Req]) Requests() []Req {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Req(nil), e.requests...)
}

// WaitRequests waits until at least n requests have arrived and returns
// them; it fails the test if that takes longer than timeout.
func (e *Endpoint[Req]) WaitRequests(t testing.TB, n int, timeout time.Duration) []Req {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		if len(e.requests) >= n {
			reqs := append([]Req(nil), e.requests...)
			e.mu.Unlock()
			return reqs
		}
		arrived, got := e.arrived, len(e.requests)
		e.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("llmtest: waited %s for %d %s requests, got %d", timeout, n, e.name, got)
			return nil
		}
	}
}

// record stores a request; it takes no answer.
func (e *Endpoint[Req]) record(req Req) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, req)
	close(e.arrived)
	e.arrived = make(chan struct{})
}

// take stores a request and returns its answer: the next scripted one,
// else the responder's (called outside the lock, so it may use the
// endpoint), else a 500.
func (e *Endpoint[Req]) take(req Req) MediaResponse {
	e.record(req)
	e.mu.Lock()
	var r MediaResponse
	responder := e.responder
	scripted := len(e.queue) > 0
	if scripted {
		r, e.queue = e.queue[0], e.queue[1:]
	}
	e.mu.Unlock()
	switch {
	case scripted:
		return r
	case responder != nil:
		return responder(req)
	default:
		return MediaStatus(500).WithErrorMessage("llmtest: no scripted " + e.name)
	}
}
