package httpapi

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

// BackoffConfig configures a Backoff; zero fields take the defaults.
type BackoffConfig struct {
	// Free is how many wrong credentials an address may send before it
	// must wait (default 5: typos, a pasted token with a stray space).
	Free int
	// First is the first wait; each further failure doubles it, up to Max
	// (defaults 1s and 5m: guessing a 16-character token at 12 tries an
	// hour is hopeless).
	First, Max time.Duration
	// Forget is how long after its last failure (and its wait) an
	// address starts afresh (default 15m).
	Forget time.Duration
	// MaxTracked bounds the addresses remembered (default 10,000): past
	// it, forgotten ones are dropped, then any.
	MaxTracked int
	// LogEvery is how often each address may have a log line (default
	// 1m); the line counts the events kept back.
	LogEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Backoff slows down guessing of a secret per client address: after Free
// wrong tries an address waits, longer after each further one, and while
// it waits every try is refused unchecked, the right one too (checking it
// would tell the guesser when it is right). The console login and the
// API share one, since they guard the same token. IPv6 addresses count
// per /64, the block one client usually holds.
type Backoff struct {
	cfg     BackoffConfig
	mu      sync.Mutex
	clients map[netip.Addr]*backoffEntry
	swept   time.Time
}

type backoffEntry struct {
	failures int
	last     time.Time
	until    time.Time
	// logged is when the address last had a log line; failures and
	// refusals since are counted for the next.
	logged           time.Time
	unlogged, refuse int
}

// Verdict is what a Backoff says of one try.
type Verdict struct {
	// Wait is how long the address must wait before its next try is
	// checked (0: it may try now).
	Wait time.Duration
	// Log is true when the caller should log a line now; Failures and
	// Refused count the wrong tries and the tries refused unchecked
	// since the address's last line, this one included.
	Log               bool
	Failures, Refused int
}

// NewBackoff returns a Backoff.
func NewBackoff(c BackoffConfig) *Backoff {
	if c.Free <= 0 {
		c.Free = 5
	}
	if c.First <= 0 {
		c.First = time.Second
	}
	if c.Max <= 0 {
		c.Max = 5 * time.Minute
	}
	if c.Forget <= 0 {
		c.Forget = 15 * time.Minute
	}
	if c.MaxTracked <= 0 {
		c.MaxTracked = 10000
	}
	if c.LogEvery <= 0 {
		c.LogEvery = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &Backoff{cfg: c, clients: map[netip.Addr]*backoffEntry{}}
}

// backoffKey is the address a client is counted under.
func backoffKey(ip netip.Addr) netip.Addr {
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

// Check says whether ip may try now. A try it refuses (Wait > 0) is
// counted for the log line.
func (b *Backoff) Check(ip netip.Addr) Verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	e := b.clients[backoffKey(ip)]
	if e == nil || !now.Before(e.until) {
		return Verdict{}
	}
	e.refuse++
	return b.verdict(e, now)
}

// Fail records a wrong credential from ip.
func (b *Backoff) Fail(ip netip.Addr) Verdict {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	key := backoffKey(ip)
	e := b.clients[key]
	if e != nil && now.Sub(e.last) >= b.cfg.Forget && !now.Before(e.until) {
		e.failures = 0
	}
	if e == nil {
		b.makeRoom(now)
		e = &backoffEntry{}
		b.clients[key] = e
	}
	e.failures++
	e.last = now
	e.unlogged++
	if over := e.failures - b.cfg.Free; over > 0 {
		wait := backoff.Policy{Initial: b.cfg.First, Max: b.cfg.Max}.Delay(over - 1)
		e.until = now.Add(wait)
	}
	return b.verdict(e, now)
}

// Succeed forgets ip's failures: a right credential, checked.
func (b *Backoff) Succeed(ip netip.Addr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.clients, backoffKey(ip))
}

// Tracked is how many addresses the Backoff remembers.
func (b *Backoff) Tracked() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

func (b *Backoff) verdict(e *backoffEntry, now time.Time) Verdict {
	v := Verdict{}
	if now.Before(e.until) {
		v.Wait = e.until.Sub(now)
	}
	if e.logged.IsZero() || now.Sub(e.logged) >= b.cfg.LogEvery {
		v.Log, v.Failures, v.Refused = true, e.unlogged, e.refuse
		e.logged, e.unlogged, e.refuse = now, 0, 0
	}
	return v
}

// makeRoom keeps the table within MaxTracked before an address is added:
// it drops the addresses that are forgotten anyway (at most once a
// second, the sweep reads them all), then, if it must, one at random
// (map order): a flood from many addresses then costs each of them some
// of its back-off, never the process its memory.
func (b *Backoff) makeRoom(now time.Time) {
	if len(b.clients) < b.cfg.MaxTracked {
		return
	}
	if now.Sub(b.swept) >= time.Second {
		b.swept = now
		for k, e := range b.clients {
			if now.Sub(e.last) >= b.cfg.Forget && !now.Before(e.until) {
				delete(b.clients, k)
			}
		}
	}
	for k := range b.clients {
		if len(b.clients) < b.cfg.MaxTracked {
			break
		}
		delete(b.clients, k)
	}
}

// RetryAfter is a wait as a Retry-After header value: whole seconds,
// rounded up.
func RetryAfter(d time.Duration) string {
	return strconv.Itoa(int(math.Ceil(d.Seconds())))
}

// WriteBackoff answers a try refused while its address waits: 429 with
// Retry-After and a JSON error that says so.
func WriteBackoff(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", RetryAfter(wait))
	WriteError(w, http.StatusTooManyRequests, "too many wrong tokens from your address: wait "+RetryAfter(wait)+
		" s before trying again (until then even the right token is refused)")
}
