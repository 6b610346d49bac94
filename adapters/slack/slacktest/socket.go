package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// socketMode serves Socket Mode connections: envelopes out, acks in,
// pings, redelivery after an ack timeout, dropped connections.
type socketMode struct {
	*state
	*delivery
}

// writeTimeout bounds one frame write, so a client that stopped reading
// cannot hold a connection goroutine forever.
const writeTimeout = 5 * time.Second

// sockConn is one Socket Mode websocket connection. Frames go out through
// queue, written in order by the connection's writer goroutine.
type sockConn struct {
	ws   *websocket.Conn
	seq  int // order of acceptance; the highest routable one gets events
	wake chan struct{}
	stop chan struct{}
	// Guarded by Server.mu:
	queue [][]byte
	// routable means new envelopes may go here: not dropped and not told
	// to disconnect.
	routable bool
	// inflight are envelopes sent here, in order; acked or superseded
	// ones are marked done and dropped lazily.
	inflight []*envelope
}

// enqueueLocked queues a frame. Callers hold Server.mu.
func (c *sockConn) enqueueLocked(f []byte) {
	c.queue = append(c.queue, f)
	wake(c.wake)
}

// envelope is one Socket Mode delivery of an event.
type envelope struct {
	id      string
	ev      *event
	attempt int
	// auto marks a first delivery or a retry the fake made on its own:
	// it is dropped if the event is acked while it waits for a
	// connection. Redeliver's envelopes always go out.
	auto   bool
	conn   *sockConn // nil while waiting for a connection
	sentAt time.Time // real time, for WithAckTimeout
	done   bool      // acked, or replaced by a retry
}

// envelopeWire is an events_api frame.
type envelopeWire struct {
	EnvelopeID             string          `json:"envelope_id"`
	Payload                json.RawMessage `json:"payload"`
	Type                   string          `json:"type"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
	RetryAttempt           int             `json:"retry_attempt"`
	RetryReason            string          `json:"retry_reason"`
}

// connsLocked returns the open connections. Callers hold s.mu.
func (s *state) connsLocked() []*sockConn {
	out := make([]*sockConn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// serveSocket runs one Socket Mode connection until it closes.
func (s *socketMode) serveSocket(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	if !s.tickets[ticket] || s.revoked {
		s.mu.Unlock()
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	delete(s.tickets, ticket)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	// slack-go sends Origin https://api.slack.com; tests dial from
	// anywhere.
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered
	}
	c := &sockConn{ws: ws, wake: make(chan struct{}, 1), stop: make(chan struct{}), routable: true}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.connections++
	c.seq = s.connections
	s.conns[c] = struct{}{}
	c.enqueueLocked(mustJSON(map[string]any{
		"type":            "hello",
		"num_connections": s.liveLocked(),
		"debug_info": map[string]any{
			"host":                        "fake",
			"build_number":                1,
			"approximate_connection_time": 3600,
		},
		"connection_info": map[string]any{"app_id": appID},
	}))
	s.flushPendingLocked(c)
	s.notify()
	s.mu.Unlock()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(c)
	}()
	s.readLoop(c)

	s.mu.Lock()
	delete(s.conns, c)
	c.routable = false
	lost := c.inflight
	c.inflight = nil
	for _, env := range lost {
		if !env.done {
			env.done = true
			s.retryLocked(env)
		}
	}
	s.notify()
	s.mu.Unlock()
	close(c.stop)
	<-writerDone
	_ = ws.Close()
}

// flushPendingLocked sends the envelopes that waited for a connection.
// Callers hold s.mu.
func (s *socketMode) flushPendingLocked(c *sockConn) {
	for _, env := range s.pending {
		if env.auto && env.ev.acked {
			continue
		}
		s.sendLocked(c, env)
	}
	s.pending = nil
}

// writeLoop writes queued frames and pings until the connection stops.
func (s *socketMode) writeLoop(c *sockConn) {
	var tick <-chan time.Time
	if s.pingInterval > 0 {
		ticker := time.NewTicker(s.pingInterval)
		defer ticker.Stop()
		tick = ticker.C
	}
	ping := func() bool {
		err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(writeTimeout))
		return err == nil
	}
	// A first ping at once: slack-go counts from the moment it connects.
	if tick != nil && !ping() {
		_ = c.ws.UnderlyingConn().Close()
		return
	}
	for {
		s.mu.Lock()
		q := c.queue
		c.queue = nil
		s.mu.Unlock()
		for _, f := range q {
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := c.ws.WriteMessage(websocket.TextMessage, f); err != nil {
				// The reader sees the closed connection and ends it.
				_ = c.ws.UnderlyingConn().Close()
				return
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-c.wake:
		case <-tick:
			if !ping() {
				_ = c.ws.UnderlyingConn().Close()
				return
			}
		case <-c.stop:
			return
		}
	}
}

// readLoop handles acks (and pongs, inside ReadMessage) until the
// connection ends.
func (s *socketMode) readLoop(c *sockConn) {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		_ = json.Unmarshal(data, &ack)
		s.mu.Lock()
		if env := s.envelopes[ack.EnvelopeID]; env != nil {
			env.done = true
			env.ev.acked = true
			ackTapLocked(env)
			if env.ev.kind == envelopeSlash && env.ev.response == nil {
				body := []byte(ack.Payload)
				if string(body) == "null" {
					body = nil
				}
				env.ev.response = &SlashResponse{Body: body}
			}
		} else {
			s.badAcks++
		}
		s.notify()
		s.mu.Unlock()
	}
}

// ackWatcher resends envelopes whose ack is overdue (WithAckTimeout).
func (s *socketMode) ackWatcher() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		next := s.expireLocked(time.Now())
		s.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(wait)
		select {
		case <-s.done:
			return
		case <-s.ackWake:
		case <-timer.C:
		}
	}
}

// expireLocked retries every envelope unacked for ackTimeout and returns
// when the next one falls due, zero if none. Callers hold s.mu.
func (s *socketMode) expireLocked(now time.Time) time.Time {
	var next time.Time
	var expired []*envelope
	for c := range s.conns {
		live := c.inflight[:0]
		for _, env := range c.inflight {
			if env.done {
				continue
			}
			due := env.sentAt.Add(s.ackTimeout)
			if !now.Before(due) {
				env.done = true
				expired = append(expired, env)
				continue
			}
			if next.IsZero() || due.Before(next) {
				next = due
			}
			live = append(live, env)
		}
		c.inflight = live
	}
	for _, env := range expired {
		s.retryLocked(env)
	}
	if len(expired) > 0 {
		s.notify()
		// The retries were just sent; their deadline is a full timeout
		// away.
		due := now.Add(s.ackTimeout)
		if next.IsZero() || due.Before(next) {
			next = due
		}
	}
	return next
}

// liveLocked counts routable connections. Callers hold s.mu.
func (s *socketMode) liveLocked() int {
	n := 0
	for c := range s.conns {
		if c.routable {
			n++
		}
	}
	return n
}

// Connections returns how many socket connections were accepted so far.
func (s *socketMode) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// LiveConnections returns how many socket connections are open and may
// get events: a connection told to disconnect (Disconnect) no longer
// counts.
func (s *socketMode) LiveConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveLocked()
}

// WaitConnections waits until at least n socket connections were accepted
// and one of them is live; after timeout it fails the test. Call it from
// the test goroutine.
func (s *socketMode) WaitConnections(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return s.connections >= n && s.liveLocked() >= 1 },
		func() string {
			return fmt.Sprintf("%d socket connection(s) with one live (accepted %d, live %d)",
				n, s.Connections(), s.LiveConnections())
		})
}
