package httpapi

import (
	"container/list"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// freshGrace is how long a new connection may stay silent before a
// connection over the cap may take its place: long enough for any client
// that means to send a request, short enough that silent connections
// cannot hold the server.
const freshGrace = 2 * time.Second

// logWindow is how often each rate-limited line may repeat.
const logWindow = 10 * time.Second

// ConnStats counts the connections of a server's listener.
type ConnStats struct {
	// Open is how many connections are open now, Idle how many of them
	// wait for a next request; Max is the cap (http.max_connections,
	// lowered to fit the open-file limit).
	Open, Idle, Max int
	// Refused counts connections closed at once because the cap was
	// reached and none could make room; Reclaimed counts idle or silent
	// connections closed to make room for a new one.
	Refused, Reclaimed int64
	// AcceptErrors counts failed accepts (the open-file limit reached).
	AcceptErrors int64
}

// connLimiter is a listener that keeps at most max connections open, so
// that a flood of connections cannot take the process to its open-file
// limit (where accept fails for everyone, /healthz included). At the cap
// a new connection takes the place of the one idle the longest between
// requests (HTTP lets a server close those at any time), or of one that
// has sent nothing for freshGrace; when there is neither it is closed at
// once, never queued.
type connLimiter struct {
	net.Listener
	max int
	log *slog.Logger
	now func() time.Time

	mu   sync.Mutex
	open int
	// idle holds the connections waiting for their next request, fresh
	// those that have sent nothing yet; both oldest first.
	idle, fresh list.List
	stats       ConnStats
	full        rateLog
	acceptErr   rateLog
}

func newConnLimiter(ln net.Listener, max int, log *slog.Logger, now func() time.Time) *connLimiter {
	return &connLimiter{Listener: ln, max: max, log: log, now: now}
}

// limitedConn is a connection the limiter counts.
type limitedConn struct {
	net.Conn
	l *connLimiter
	// Guarded by l.mu: the list the connection is on (nil for none), its
	// element there, since when, and whether its place went to another
	// connection (then closing it frees no place).
	on      *list.List
	elem    *list.Element
	since   time.Time
	evicted bool
	closed  bool
}

// Accept returns the next connection the cap admits.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.acceptFailed(err)
			return nil, err
		}
		lc, victim := l.admit(c)
		if victim != nil {
			_ = victim.Conn.Close()
		}
		if lc != nil {
			return lc, nil
		}
		_ = c.Close()
	}
}

// admit counts c in, with the connection that must make room for it, or
// returns nil when c must be closed.
func (l *connLimiter) admit(c net.Conn) (*limitedConn, *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lc := &limitedConn{Conn: c, l: l}
	if l.open < l.max {
		l.open++
		l.put(lc, &l.fresh, now)
		return lc, nil
	}
	var victim *limitedConn
	if e := l.idle.Front(); e != nil {
		victim = e.Value.(*limitedConn)
	} else if e := l.fresh.Front(); e != nil && now.Sub(e.Value.(*limitedConn).since) >= freshGrace {
		victim = e.Value.(*limitedConn)
	}
	if victim != nil {
		l.take(victim)
		victim.evicted = true
		l.stats.Reclaimed++
		l.put(lc, &l.fresh, now)
	} else {
		l.stats.Refused++
	}
	if n, ok := l.full.note(now); ok {
		l.log.Warn("http.max_connections reached: idle connections are closed to make room, and new ones refused when none is idle",
			"max", l.max, "events", n, "refused_total", l.stats.Refused, "reclaimed_total", l.stats.Reclaimed)
	}
	if victim == nil {
		return nil, nil
	}
	return lc, victim
}

// acceptFailed logs a failed accept at warn, once per window with a
// count: the server retries at once, and at the open-file limit that is
// thousands of times a second.
func (l *connLimiter) acceptFailed(err error) {
	if errors.Is(err, net.ErrClosed) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.AcceptErrors++
	n, ok := l.acceptErr.note(l.now())
	if !ok {
		return
	}
	msg := "http server cannot accept connections"
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		msg += ": the process is out of file descriptors; lower http.max_connections or raise the open-file limit (ulimit -n)"
	}
	l.log.Warn(msg, "err", err, "errors", n, "open", l.open, "max", l.max)
}

// connState follows a connection's state (http.Server.ConnState): idle
// between requests and silent after accept, it may make room for another.
func (l *connLimiter) connState(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.evicted || lc.closed {
		return
	}
	switch st {
	case http.StateNew:
		// Put on the fresh list when accepted.
	case http.StateIdle:
		l.take(lc)
		l.put(lc, &l.idle, l.now())
	default:
		l.take(lc)
	}
}

// Close closes the connection and frees its place.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	l := c.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !c.closed {
		c.closed = true
		l.take(c)
		if !c.evicted {
			l.open--
		}
	}
	return err
}

func (l *connLimiter) put(c *limitedConn, on *list.List, now time.Time) {
	c.on, c.since = on, now
	c.elem = on.PushBack(c)
}

func (l *connLimiter) take(c *limitedConn) {
	if c.on != nil {
		c.on.Remove(c.elem)
		c.on, c.elem = nil, nil
	}
}

func (l *connLimiter) snapshot() ConnStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stats
	s.Open, s.Idle, s.Max = l.open, l.idle.Len(), l.max
	return s
}

// rateLog lets a line through once per logWindow and counts the events
// in between, which the next line reports. Its owner serializes calls.
type rateLog struct {
	last  time.Time
	count int
}

// note counts an event and reports whether to log now, with the events
// the line covers (this one and those kept back since the last line).
func (r *rateLog) note(now time.Time) (int, bool) {
	r.count++
	if !r.last.IsZero() && now.Sub(r.last) < logWindow {
		return 0, false
	}
	n := r.count
	r.last, r.count = now, 0
	return n, true
}
