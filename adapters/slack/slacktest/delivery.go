package slacktest

import (
	"encoding/json"
	"fmt"
	"time"
)

// delivery sends events to the app, over Socket Mode or the Events API,
// whichever it uses.
type delivery struct{ *state }

// deliverLocked sends ev as delivery number attempt (0 for the first): to
// the Events API queue, the newest live socket, or the queue of events
// waiting for a socket. Callers hold s.mu.
func (s *delivery) deliverLocked(ev *event, attempt int, auto bool) {
	ev.retries = max(ev.retries, attempt)
	if s.eventsURL != "" && ev.kind == "" {
		reason := ""
		if attempt > 0 {
			reason = "http_timeout"
		}
		s.httpQueue = append(s.httpQueue, httpItem{ev: ev, retryNum: attempt, reason: reason})
		wake(s.httpWake)
		return
	}
	env := &envelope{id: newUUID(), ev: ev, attempt: attempt, auto: auto}
	ev.cur = env
	if c := s.newestLocked(); c != nil {
		s.sendLocked(c, env)
		return
	}
	s.pending = append(s.pending, env)
}

// sendLocked writes env to c. Callers hold s.mu.
func (s *delivery) sendLocked(c *sockConn, env *envelope) {
	reason := ""
	if env.attempt > 0 {
		reason = "timeout"
	}
	env.conn, env.sentAt = c, time.Now()
	c.inflight = append(c.inflight, env)
	s.envelopes[env.id] = env
	env.ev.deliveries++
	kind := env.ev.kind
	if kind == "" {
		kind = "events_api"
	}
	c.enqueueLocked(mustJSON(envelopeWire{
		EnvelopeID:             env.id,
		Payload:                env.ev.body,
		Type:                   kind,
		AcceptsResponsePayload: kind == envelopeSlash,
		RetryAttempt:           env.attempt,
		RetryReason:            reason,
	}))
	wake(s.ackWake)
}

// retryLocked sends env's event again after env was lost (its connection
// dropped or its ack timed out), unless the event was acked, already sent
// again, or out of retries. Callers hold s.mu.
func (s *delivery) retryLocked(env *envelope) {
	ev := env.ev
	if s.closed || ev.acked || ev.cur != env || ev.autoRetries >= maxAutoRetries {
		return
	}
	ev.autoRetries++
	s.deliverLocked(ev, ev.retries+1, true)
}

// newestLocked returns the newest routable connection, nil if none.
// Callers hold s.mu.
func (s *delivery) newestLocked() *sockConn {
	var newest *sockConn
	for c := range s.conns {
		if c.routable && (newest == nil || c.seq > newest.seq) {
			newest = c
		}
	}
	return newest
}

// emitLocked wraps inner in an event_callback with the next event id and
// hands it to delivery. Callers hold s.mu.
func (s *delivery) emitLocked(inner []byte) string {
	s.nextEvent++
	id := fmt.Sprintf("Ev%08d", s.nextEvent)
	body, err := json.Marshal(callbackWire{
		Token:          verificationToken,
		TeamID:         teamID,
		APIAppID:       appID,
		Event:          inner,
		Type:           "event_callback",
		EventID:        id,
		EventTime:      s.now().Unix(),
		Authorizations: []authorizationWire{{TeamID: teamID, UserID: botUserID, IsBot: true}},
		EventContext:   "4-fake-" + id,
	})
	if err != nil {
		panic(fmt.Sprintf("slacktest: inner event is not JSON: %v", err))
	}
	ev := &event{id: id, body: body}
	s.events[id] = ev
	s.lastEventID = id
	s.deliverLocked(ev, 0, true)
	s.notify()
	return id
}
