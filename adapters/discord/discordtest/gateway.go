package discordtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// gatewayServer serves the gateway websocket: identify, resume,
// heartbeats and dispatches, with counters and faults for tests.
type gatewayServer struct {
	*state
	*delivery
}

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatAck   = 11
)

// Gateway intents that WithStrictIntents checks.
const (
	intentGuildMessages  = 1 << 9
	intentDirectMessages = 1 << 12
	// intentDirectMessageReactions gets reactions in DMs.
	intentDirectMessageReactions = 1 << 13
	intentMessageContent         = 1 << 15
)

// writeTimeout bounds one frame write, so a client that stopped reading
// cannot hold a connection goroutine forever.
const writeTimeout = 5 * time.Second

// gwSession is a gateway session: what READY started and RESUME continues.
// It outlives its connection so that a dropped client can resume.
type gwSession struct {
	id      string
	intents int
	// shard is [shard_id, shard_count] from IDENTIFY ([0, 1] when none).
	shard [2]int
	seq   int64    // last sequence number used
	log   [][]byte // log[i] is the dispatch with sequence i+1
	conn  *gwConn  // the live connection, nil while disconnected
}

// gwConn is one websocket connection. Frames go out through queue, written
// in order by the connection's writer goroutine.
type gwConn struct {
	ws      *websocket.Conn
	queue   [][]byte // guarded by Server.mu
	wake    chan struct{}
	stop    chan struct{}
	session *gwSession // guarded by Server.mu; set by IDENTIFY or RESUME
	// heartbeats counts the client's heartbeats since its session started
	// here; guarded by Server.mu.
	heartbeats int
}

// enqueueLocked queues a frame. Callers hold s.mu.
func (c *gwConn) enqueueLocked(f []byte) {
	c.queue = append(c.queue, f)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// live reports whether c carries its session. Callers hold s.mu.
func (c *gwConn) live() bool { return c.session != nil && c.session.conn == c }

var upgrader = websocket.Upgrader{
	// Tests dial from anywhere; discordgo sends no Origin anyway.
	CheckOrigin: func(*http.Request) bool { return true },
}

// serveGateway runs one websocket connection until it closes.
func (s *gatewayServer) serveGateway(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered
	}
	c := &gwConn{ws: ws, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	// A clean close ends the session, as on Discord; anything else leaves
	// it resumable. The session ends before the close is echoed, so a
	// client that saw the echo cannot resume it.
	ws.SetCloseHandler(func(code int, _ string) error {
		if code == websocket.CloseNormalClosure || code == websocket.CloseGoingAway {
			s.mu.Lock()
			if sess := c.session; sess != nil && sess.conn == c {
				delete(s.sessions, sess.id)
			}
			s.mu.Unlock()
		}
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(writeTimeout))
		return nil
	})
	c.enqueueLocked(mustFrame(opHello, map[string]any{
		"heartbeat_interval": s.heartbeat.Milliseconds(),
		"_trace":             []string{"discordtest"},
	}))
	s.mu.Unlock()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop(c)
	}()
	code := s.readLoop(c)

	s.mu.Lock()
	if sess := c.session; sess != nil && sess.conn == c {
		sess.conn = nil
		if code == websocket.CloseNormalClosure || code == websocket.CloseGoingAway {
			delete(s.sessions, sess.id) // the close handler may not have run
		}
	}
	delete(s.conns, c)
	s.notify()
	s.mu.Unlock()
	close(c.stop)
	<-writerDone
	_ = ws.Close()
}

// writeLoop writes queued frames until the connection stops.
func (s *gatewayServer) writeLoop(c *gwConn) {
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
		case <-c.stop:
			return
		}
	}
}

// readLoop handles client frames until the connection ends and returns the
// close code the client sent, 0 if it just went away.
func (s *gatewayServer) readLoop(c *gwConn) int {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			return 0
		}
		var f struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(data, &f); err != nil {
			return closeWith(c, 4002, "Error while decoding payload.")
		}
		switch f.Op {
		case opHeartbeat:
			s.mu.Lock()
			c.heartbeats++
			s.heartbeats++
			c.enqueueLocked(mustFrame(opHeartbeatAck, nil))
			s.notify()
			s.mu.Unlock()
		case opIdentify:
			if code := s.identify(c, f.D); code != 0 {
				return code
			}
		case opResume:
			if code := s.resume(c, f.D); code != 0 {
				return code
			}
		}
		// Other opcodes (presence, voice, member requests) are ignored.
	}
}

// closeWith sends a close frame with a gateway close code and returns it.
func closeWith(c *gwConn, code int, text string) int {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(writeTimeout))
	return code
}

func (s *gatewayServer) tokenOK(token string) bool {
	return token == s.token || token == "Bot "+s.token
}

// identify handles IDENTIFY: a new session and READY. It returns a close
// code if the connection must end.
func (s *gatewayServer) identify(c *gwConn, d json.RawMessage) int {
	var id struct {
		Token   string  `json:"token"`
		Intents int     `json:"intents"`
		Shard   *[2]int `json:"shard"`
	}
	if json.Unmarshal(d, &id) != nil {
		return closeWith(c, 4002, "Error while decoding payload.")
	}
	shard := [2]int{0, 1}
	if id.Shard != nil {
		shard = *id.Shard
	}
	if shard[1] < 1 || shard[0] < 0 || shard[0] >= shard[1] {
		return closeWith(c, 4010, "Invalid shard.")
	}
	if !s.tokenOK(id.Token) {
		return closeWith(c, 4004, "Authentication failed.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.session != nil {
		return closeWith(c, 4005, "Already authenticated.")
	}
	s.nextSession++
	sess := &gwSession{id: "discordtest-session-" + strconv.Itoa(s.nextSession), intents: id.Intents, shard: shard}
	s.sessions[sess.id] = sess
	sess.conn, c.session = c, sess
	c.heartbeats = 0
	ready, _ := json.Marshal(map[string]any{
		"v":                  10,
		"user":               s.botWire(),
		"session_id":         sess.id,
		"session_type":       "normal",
		"resume_gateway_url": s.GatewayURL(),
		"guilds":             []any{},
		"private_channels":   []any{},
		"application":        map[string]any{"id": s.bot.ID, "flags": 0},
	})
	c.enqueueLocked(sess.appendLocked("READY", ready))
	s.identifies++
	s.intents = id.Intents
	s.notify()
	return 0
}

// resume handles RESUME: the missed dispatches, then RESUMED; or
// INVALID_SESSION for a session the fake does not know.
func (s *gatewayServer) resume(c *gwConn, d json.RawMessage) int {
	var r struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if json.Unmarshal(d, &r) != nil {
		return closeWith(c, 4002, "Error while decoding payload.")
	}
	if !s.tokenOK(r.Token) {
		return closeWith(c, 4004, "Authentication failed.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[r.SessionID]
	if sess == nil || r.Seq > sess.seq || c.session != nil {
		c.enqueueLocked(mustFrame(opInvalidSession, false))
		return 0
	}
	if old := sess.conn; old != nil {
		old.session = nil // the newer connection takes the session over
	}
	sess.conn, c.session = c, sess
	c.heartbeats = 0
	// Sequence 1 is READY, which is never replayed.
	for seq := max(r.Seq, 1) + 1; seq <= sess.seq; seq++ {
		c.enqueueLocked(sess.log[seq-1])
	}
	c.enqueueLocked(sess.appendLocked("RESUMED", json.RawMessage(`{"_trace":["discordtest"]}`)))
	s.resumes++
	s.notify()
	return 0
}

// appendLocked gives a dispatch the session's next sequence number and
// logs it for RESUME. Callers hold s.mu.
func (sess *gwSession) appendLocked(eventType string, d json.RawMessage) []byte {
	sess.seq++
	seq := sess.seq
	f, _ := json.Marshal(frame{Op: opDispatch, D: d, S: &seq, T: &eventType})
	sess.log = append(sess.log, f)
	return f
}

// mustFrame builds a non-dispatch frame.
func mustFrame(op int, d any) []byte {
	raw, _ := json.Marshal(d)
	f, _ := json.Marshal(frame{Op: op, D: raw})
	return f
}

// InjectFrame sends raw, as it is, on every live identified connection:
// an unknown opcode, an unknown event type, a malformed payload. It is not
// logged for RESUME and takes no sequence number (use Dispatch for that).
func (s *gatewayServer) InjectFrame(raw json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.live() {
			c.enqueueLocked(append([]byte(nil), raw...))
		}
	}
}

// Dispatch sends an event of any type (op 0 with the next sequence number)
// to every identified session, like the events SendDM creates.
func (s *gatewayServer) Dispatch(eventType string, data any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dispatchLocked(eventType, data, nil)
}

// DisconnectGateway drops every websocket connection abruptly, without a
// close frame, as a network failure would. Sessions stay resumable:
// events dispatched meanwhile wait in their log and are replayed on
// RESUME; an IDENTIFY starts a new session instead.
func (s *gatewayServer) DisconnectGateway() {
	s.mu.Lock()
	conns := make([]*gwConn, 0, len(s.conns))
	for c := range s.conns {
		if c.live() {
			c.session.conn = nil
		}
		conns = append(conns, c)
	}
	s.notify()
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.ws.UnderlyingConn().Close()
	}
}

// Identifies returns how many IDENTIFYs succeeded (READY sent).
func (s *gatewayServer) Identifies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identifies
}

// Resumes returns how many RESUMEs succeeded (RESUMED sent).
func (s *gatewayServer) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// Intents returns the intents of the latest successful IDENTIFY, 0 if none.
func (s *gatewayServer) Intents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.intents
}

// Connected returns how many connections currently carry a session (sent
// READY or RESUMED and were not dropped since).
func (s *gatewayServer) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.live() {
			n++
		}
	}
	return n
}

// Heartbeats returns how many heartbeats (op 1) clients sent.
func (s *gatewayServer) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// WaitReady waits until a connection carries a session (READY or RESUMED
// was sent and the connection was not dropped since) and every such
// connection has sent its first heartbeat since. After timeout it fails
// the test.
//
// The heartbeat matters with discordgo: it sends the first one from a
// goroutine right after Open returns, and a Session.Close that wins that
// race makes the heartbeat fail and discordgo reconnect on its own,
// leaking the session. Call WaitReady after Open (and after a reconnect)
// before closing the session.
func (s *gatewayServer) WaitReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout, func() bool {
		ready := false
		for c := range s.conns {
			if c.live() {
				if c.heartbeats == 0 {
					return false
				}
				ready = true
			}
		}
		return ready
	}, func() string { return "a gateway session to be ready and heartbeating" })
}
