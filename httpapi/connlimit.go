package httpapi

import (
	"container/list"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// freshGrace is how long a new connection may stay silent before a
// connection over the cap may take its place: long enough for any
// client that means to send a request, short enough that silent
// connections cannot hold the server.
const freshGrace = 2 * time.Second

// slowScan bounds how many connections reading a body one admission
// looks at for a slow one: a flood at the cap admits (or refuses) every
// new connection, and the oldest bodies are the likeliest to be slow.
const slowScan = 64

// logWindow is how often each rate-limited line may repeat.
const logWindow = 10 * time.Second

// ConnStats counts the connections of a server's listener.
type ConnStats struct {
	// Open is how many connections are open now, Idle how many of them
	// wait for a next request; Max is the cap (http.max_connections,
	// lowered to fit the open-file limit), PerAddress each address's
	// share of it (http.max_connections_per_ip; 0: none).
	Open, Idle, Max, PerAddress int
	// Bodies is how many connections are reading a request's body now.
	Bodies int
	// Refused counts connections closed at once because the cap was
	// reached and none could make room, RefusedPerAddress those closed
	// because their address held its share; Reclaimed counts idle,
	// silent or slow connections closed to make room for a new one,
	// SlowBodies those of them that were trickling a body.
	Refused, RefusedPerAddress, Reclaimed, SlowBodies int64
	// AcceptErrors counts failed accepts (the open-file limit reached).
	AcceptErrors int64
}

// connLimits are a connLimiter's bounds.
type connLimits struct {
	// max caps open connections; perAddr caps those of one address (0:
	// no share), except from the exempt peers (trusted proxies, which
	// carry many clients on their connections).
	max, perAddr int
	exempt       proxies
	// minRate is the least a body must arrive at, in bytes a second,
	// from its header on, for its connection to keep its place at a cap.
	minRate int64
}

// connLimiter is a listener that keeps at most max connections open, so
// that a flood of connections cannot take the process to its open-file
// limit (where accept fails for everyone, /healthz included), and at
// most perAddr of them from one address, so that one address cannot
// take the others' places. At a cap a new connection takes the place of
// the one idle the longest between requests (HTTP lets a server close
// those at any time), of one that has sent nothing for freshGrace, or of
// one whose body has come slower than minRate since its header; when
// there is none it is closed at once, never queued. At an address's
// share, only that address's own connections make room.
type connLimiter struct {
	net.Listener
	lim connLimits
	log *slog.Logger
	now func() time.Time

	mu   sync.Mutex
	open int
	// idle holds the connections waiting for their next request, fresh
	// those that have sent nothing yet (or only part of a request's
	// header), bodies those whose handler reads a body; each oldest
	// first.
	idle, fresh, bodies list.List
	// byAddr holds each counted address's connections, oldest first.
	byAddr    map[netip.Addr]*list.List
	stats     ConnStats
	full      rateLog
	addrFull  rateLog
	acceptErr rateLog
}

func newConnLimiter(ln net.Listener, lim connLimits, log *slog.Logger, now func() time.Time) *connLimiter {
	return &connLimiter{Listener: ln, lim: lim, log: log, now: now, byAddr: map[netip.Addr]*list.List{}}
}

// limitedConn is a connection the limiter counts.
type limitedConn struct {
	net.Conn
	l *connLimiter
	// addr is the key of the connection's address in l.byAddr (the zero
	// Addr when its address has no share: an exempt peer).
	addr netip.Addr
	// bodyRead counts the bytes of the current request's body read so
	// far (written by the handler's goroutine, read under l.mu).
	bodyRead atomic.Int64
	// Guarded by l.mu: the list the connection is on (nil for none), its
	// element there, since when, its element in its address's list, and
	// whether its place went to another connection (then closing it
	// frees no place).
	on       *list.List
	elem     *list.Element
	since    time.Time
	addrElem *list.Element
	evicted  bool
	closed   bool
}

// Accept returns the next connection the caps admit.
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

// addrKey is the address c is counted under for the per-address share:
// the peer's (an IPv6 /64, the block one client usually holds), or the
// zero Addr for a peer without a share.
func (l *connLimiter) addrKey(c net.Conn) netip.Addr {
	if l.lim.perAddr <= 0 {
		return netip.Addr{}
	}
	ip := peerIP(c.RemoteAddr().String())
	if !ip.IsValid() || l.lim.exempt.trusted(ip) {
		return netip.Addr{}
	}
	return backoffKey(ip)
}

// admit counts c in, with the connection that must make room for it, or
// returns nil when c must be closed.
func (l *connLimiter) admit(c net.Conn) (*limitedConn, *limitedConn) {
	key := l.addrKey(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	lc := &limitedConn{Conn: c, l: l, addr: key}
	mine := l.byAddr[key]
	if key.IsValid() && mine != nil && mine.Len() >= l.lim.perAddr {
		// The address holds its share: one of its own must make room.
		victim := l.victimAmong(mine, now)
		if victim == nil {
			l.stats.RefusedPerAddress++
			if n, ok := l.addrFull.note(now); ok {
				l.log.Warn("http.max_connections_per_ip reached: an address's new connections are refused while its own are all busy"+
					peerHint(key), "ip", key.String(), "per_ip", l.lim.perAddr, "events", n, "refused_total", l.stats.RefusedPerAddress)
			}
			return nil, nil
		}
		l.evict(victim, now)
		l.count(lc, now)
		return lc, victim
	}
	if l.open < l.lim.max {
		l.open++
		l.count(lc, now)
		return lc, nil
	}
	victim := l.victim(now)
	if victim != nil {
		l.evict(victim, now)
		l.count(lc, now)
	} else {
		l.stats.Refused++
	}
	if n, ok := l.full.note(now); ok {
		l.log.Warn("http.max_connections reached: idle, silent and slow connections are closed to make room, and new ones refused when there are none",
			"max", l.lim.max, "events", n, "refused_total", l.stats.Refused, "reclaimed_total", l.stats.Reclaimed,
			"slow_bodies_total", l.stats.SlowBodies)
	}
	if victim == nil {
		return nil, nil
	}
	return lc, victim
}

// peerHint is what the per-address refusal's line adds for an address of
// this machine or a private network: most likely a reverse proxy that is
// not listed as one, whose clients then share one address's share.
func peerHint(ip netip.Addr) string {
	if ip.IsLoopback() || ip.IsPrivate() {
		return "; if a reverse proxy connects from it, list it in http.trusted_proxies (a trusted proxy has no share of its own)"
	}
	return ""
}

// victim is the connection to make room at the cap: the one idle the
// longest, else the oldest silent past freshGrace, else the oldest body
// behind the minimum rate; nil when there is none.
func (l *connLimiter) victim(now time.Time) *limitedConn {
	if e := l.idle.Front(); e != nil {
		return e.Value.(*limitedConn)
	}
	if e := l.fresh.Front(); e != nil && now.Sub(e.Value.(*limitedConn).since) >= freshGrace {
		return e.Value.(*limitedConn)
	}
	n := 0
	for e := l.bodies.Front(); e != nil && n < slowScan; e, n = e.Next(), n+1 {
		if c := e.Value.(*limitedConn); l.slow(c, now) {
			return c
		}
	}
	return nil
}

// victimAmong is the connection of one address (mine, oldest first) to
// make room for its new one: idle, silent past freshGrace or a slow
// body, the oldest such; nil when all are busy.
func (l *connLimiter) victimAmong(mine *list.List, now time.Time) *limitedConn {
	for e := mine.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitedConn)
		switch c.on {
		case &l.idle:
			return c
		case &l.fresh:
			if now.Sub(c.since) >= freshGrace {
				return c
			}
		case &l.bodies:
			if l.slow(c, now) {
				return c
			}
		}
	}
	return nil
}

// slow reports whether less of c's body has come than minRate allows for
// the time since its header. There is no grace, as there is for a silent
// connection: a small body comes with its header or a round trip after,
// a large one at no less than the rate, and the bodies are judged oldest
// first, so a body in its first round trip makes room only after every
// older one behind the rate has. Slow bodies that all began together
// would otherwise hold every place for the grace, again and again.
func (l *connLimiter) slow(c *limitedConn, now time.Time) bool {
	took := now.Sub(c.since)
	return took > 0 && c.bodyRead.Load() < int64(took.Seconds()*float64(l.lim.minRate))
}

// evict takes victim's place away: closing it frees none.
func (l *connLimiter) evict(victim *limitedConn, now time.Time) {
	if victim.on == &l.bodies {
		l.stats.SlowBodies++
	}
	l.take(victim)
	l.uncount(victim)
	victim.evicted = true
	l.stats.Reclaimed++
}

// count puts c on the fresh list and its address's.
func (l *connLimiter) count(c *limitedConn, now time.Time) {
	l.put(c, &l.fresh, now)
	if !c.addr.IsValid() {
		return
	}
	mine := l.byAddr[c.addr]
	if mine == nil {
		mine = list.New()
		l.byAddr[c.addr] = mine
	}
	c.addrElem = mine.PushBack(c)
}

// uncount takes c off its address's list, forgetting an address with no
// connection left.
func (l *connLimiter) uncount(c *limitedConn) {
	if c.addrElem == nil {
		return
	}
	mine := l.byAddr[c.addr]
	mine.Remove(c.addrElem)
	c.addrElem = nil
	if mine.Len() == 0 {
		delete(l.byAddr, c.addr)
	}
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
	l.log.Warn(msg, "err", err, "errors", n, "open", l.open, "max", l.lim.max)
}

// connState follows a connection's state (http.Server.ConnState): idle
// between requests and silent after accept, it may make room for
// another; active (its request's header in), it may not, unless its
// body comes too slowly (bodyStarted).
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

// bodyStarted marks c as reading a request's body from now: until
// bodyDone, it may make room at a cap if the body falls behind the
// minimum rate.
func (l *connLimiter) bodyStarted(c *limitedConn) {
	c.bodyRead.Store(0)
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.evicted || c.closed {
		return
	}
	l.take(c)
	l.put(c, &l.bodies, l.now())
}

// bodyDone marks c's body as read (or given up): its request is busy,
// not slow.
func (l *connLimiter) bodyDone(c *limitedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.on == &l.bodies {
		l.take(c)
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
			l.uncount(c)
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
	s.Open, s.Idle, s.Bodies, s.Max, s.PerAddress = l.open, l.idle.Len(), l.bodies.Len(), l.lim.max, l.lim.perAddr
	return s
}

// connKey is the request context key of the request's limitedConn.
type connKey struct{}

// withConn is http.Server.ConnContext: it puts a counted connection on
// its requests' context, for the body's progress.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// connOf is the counted connection r came on (nil for none: a test's
// recorder).
func connOf(r *http.Request) *limitedConn {
	lc, _ := r.Context().Value(connKey{}).(*limitedConn)
	return lc
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
