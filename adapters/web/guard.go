package web

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

const (
	// trackedKeys bounds each limiter's memory: past it the least
	// recently used address or client id is forgotten (its limit starts
	// afresh), which a flood of new ones cannot turn into unbounded memory.
	trackedKeys = 20_000
	// streamRetryAfter is what a refused event stream is told to wait: a
	// stream is freed when a page closes, which no one can foresee.
	streamRetryAfter = 10 * time.Second
	// noticeEvery spaces the warnings about refused requests.
	noticeEvery = time.Minute
)

// guards is the web chat's defence, built once from the config: rate
// limits on posts, the client ids known to have a conversation, the stream
// caps and the origins accepted besides the request's own.
type guards struct {
	msgClient *keyedLimiter // nil: no limit
	msgIP     *keyedLimiter
	newConvIP *keyedLimiter
	known     *recentSet
	streams   streamCaps
	// lifetime is how long a stream lasts (0: for ever).
	lifetime time.Duration
	origins  map[string]bool

	// Each kind of refusal is logged at most once a minute.
	refusals       notice
	streamRefusals notice
	evictions      notice
	crossSites     notice
	notKept        notice
}

func newGuards(l Limits, allowedOrigins []string) *guards {
	g := &guards{
		msgClient: newKeyedLimiter(l.MessagesPerMinutePerClient, time.Minute, trackedKeys),
		msgIP:     newKeyedLimiter(l.MessagesPerMinutePerIP, time.Minute, trackedKeys),
		newConvIP: newKeyedLimiter(l.NewConversationsPerHourPerIP, time.Hour, trackedKeys),
		known:     newRecentSet(trackedKeys),
		streams:   streamCaps{perClient: l.StreamsPerClient, perIP: l.StreamsPerIP, total: l.MaxStreams},
		lifetime:  l.StreamLifetime,
		origins:   map[string]bool{},
	}
	for _, o := range allowedOrigins {
		if n, err := normalOrigin(o); err == nil {
			g.origins[n] = true
		}
	}
	return g
}

// ipKey is the key of an address for per-address limits: the address
// itself for IPv4, its /64 for IPv6 (one subscriber's share, which a
// script can hop around in freely), "unknown" when there is none.
func ipKey(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "unknown"
	case ip.Is4():
		return ip.String()
	}
	p, err := ip.WithZone("").Prefix(64)
	if err != nil {
		return ip.String()
	}
	return p.String()
}

// proxyHint is what a refusal's log line adds when the address is the
// machine's own or a private network's: most likely a reverse proxy the
// server does not look through, whose users then share its limits.
func proxyHint(addr netip.Addr) string {
	addr = addr.Unmap()
	if addr.IsLoopback() || addr.IsPrivate() {
		return "; if a reverse proxy sends the requests, list it in http.trusted_proxies, " +
			"or all its users share one address's limits"
	}
	return ""
}

// refuse answers a request over a limit: status, Retry-After in whole
// seconds (at least 1) and {"error": msg}.
func refuse(w http.ResponseWriter, status int, retryAfter time.Duration, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(retryAfter)))
	writeError(w, status, msg)
}

func retrySeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

// waitText says d to a person: "1 second", "40 seconds", "3 minutes".
func waitText(d time.Duration) string {
	s := retrySeconds(d)
	switch {
	case s == 1:
		return "1 second"
	case s < 90:
		return strconv.Itoa(s) + " seconds"
	}
	return strconv.Itoa((s+59)/60) + " minutes"
}

// notice lets a warning through at most once per noticeEvery and counts
// the ones held back meanwhile, so a flood gives a log line a minute, not
// a line a request.
type notice struct {
	mu      sync.Mutex
	last    time.Time
	dropped int
}

// allow reports whether to log now, and how many were held back since the
// last one logged.
func (n *notice) allow(now time.Time) (bool, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.last.IsZero() && now.Sub(n.last) < noticeEvery {
		n.dropped++
		return false, 0
	}
	dropped := n.dropped
	n.last, n.dropped = now, 0
	return true, dropped
}

// knownClient reports whether the bot already has a conversation with
// clientID: one it took a message from or showed a history to lately, or,
// failing that, one the core has messages of. A client the core cannot
// tell about (no history, or an error) counts as new.
func (rt *routes) knownClient(ctx context.Context, h core.Host, g *guards, clientID string) bool {
	if g.known.has(clientID) {
		return true
	}
	msgs, err := h.History(ctx, Platform, clientID, 1)
	if err != nil {
		if !errors.Is(err, core.ErrNotFound) {
			rt.log.Debug("asking whether a web client is new", "client", clientID, "err", err)
		}
		return false
	}
	if len(msgs) == 0 {
		return false
	}
	g.known.add(clientID)
	return true
}

// refused answers 429 for a post over limit and logs, at most once a
// minute, that the web chat is refusing requests.
func (rt *routes) refused(w http.ResponseWriter, r *http.Request, g *guards, limit string, addr netip.Addr, wait time.Duration, msg string) {
	if ok, held := g.refusals.allow(rt.clock.Now()); ok {
		rt.log.Warn("web chat refused a request over its limits"+proxyHint(addr), "limit", "adapters.web.limits."+limit,
			"ip", ipKey(addr), "path", r.URL.Path, "refusals_not_logged", held)
	}
	refuse(w, http.StatusTooManyRequests, wait, msg)
}

// sameSite refuses (403) a request from another site's page and reports
// whether r may go on.
func (rt *routes) sameSite(w http.ResponseWriter, r *http.Request, g *guards) bool {
	why := g.crossSite(r)
	if why == "" {
		return true
	}
	if ok, held := g.crossSites.allow(rt.clock.Now()); ok {
		origin := r.Header.Get("Origin")
		if len(origin) > 200 {
			origin = origin[:200]
		}
		rt.log.Warn("web chat refused a request from another site; behind a reverse proxy, pass the Host header "+
			"the browser sent or list the page's origin in adapters.web.allowed_origins",
			"why", why, "origin", origin, "host", r.Host, "path", r.URL.Path, "refusals_not_logged", held)
	}
	writeError(w, http.StatusForbidden, crossSiteRefusal)
	return false
}

// streamLifetime is how long one stream may last: the lifetime less up
// to a tenth, at random, so that pages opened together (after a restart,
// or a flood's) end apart; 0 when streams last for ever.
func (g *guards) streamLifetime() time.Duration {
	if g.lifetime <= 0 {
		return 0
	}
	return g.lifetime - rand.N(g.lifetime/10+1)
}

// evicted logs, at most once a minute, that the chat was full and a
// stream of the address holding the most made room.
func (rt *routes) evicted(g *guards, ip string) {
	if ok, held := g.evictions.allow(rt.clock.Now()); ok {
		rt.log.Warn("web chat full: the oldest stream of the address holding the most was ended to make room "+
			"(adapters.web.limits.max_streams); its page reconnects", "ip", ip, "open_streams", rt.hub.openStreams(),
			"evicted_total", rt.hub.evictions(), "evictions_not_logged", held)
	}
}

// refuseStream answers a stream over a cap before it starts: 429 when the
// client or its address holds too many, 503 when the chat holds all it
// may, 503 when stopped; with Retry-After, and the connection closed after
// the answer so that a flood of refused streams holds no descriptors.
func (rt *routes) refuseStream(w http.ResponseWriter, g *guards, verdict admission, addr netip.Addr) {
	if verdict == hubClosed {
		writeError(w, http.StatusServiceUnavailable, "web chat is not running")
		return
	}
	w.Header().Set("Connection", "close")
	status, limit, msg := http.StatusTooManyRequests, "streams_per_client",
		"This chat is open in too many pages: close one and try again."
	switch verdict {
	case tooManyForIP:
		limit, msg = "streams_per_ip", "Too many chat pages are open from your network: close one and try again."
	case hubFull:
		status, limit, msg = http.StatusServiceUnavailable, "max_streams", "The web chat is full right now: try again in a moment."
	}
	if ok, held := g.streamRefusals.allow(rt.clock.Now()); ok {
		rt.log.Warn("web chat refused an event stream over its limits"+proxyHint(addr), "limit", "adapters.web.limits."+limit,
			"ip", ipKey(addr), "open_streams", rt.hub.openStreams(), "refusals_not_logged", held)
	}
	refuse(w, status, streamRetryAfter, msg)
}
