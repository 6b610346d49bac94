// Package backoff computes the waits between tries of something that
// failed: exponential, capped, with optional jitter. Every retry loop in
// Parley (the model client, scheduled sends and jobs, the run-outcome
// retry, the listener, MCP reconnects, the spool, the adapters' sends,
// polls and inbound hand-offs) takes its delays from here, so the rule is
// written once.
//
// A platform's own wait (Retry-After, a 429's retry_after) is read by the
// loop that got it, because what it means differs: the model client waits
// exactly what the header says (zero included) instead of the backoff,
// Telegram's poll waits the longer of the two, and adapters/retry counts
// rate limits apart from failures. The backoff is what a loop waits when
// the other side said nothing.
//
// It computes delays and does not wait. Each loop already waits on its own
// terms: on an injected core.Clock that tests drive by hand (core.Sleep),
// on the dispatcher's stop signal, on the spool's, on a context. A library
// such as cenkalti/backoff sleeps on real timers and owns the loop, which
// would take those waits away from the fake clocks the tests rely on, so a
// small package that only does the arithmetic fits better than a
// dependency.
package backoff

import (
	"math/rand/v2"
	"time"
)

// DefaultMultiplier is the growth per try when a Policy leaves Multiplier
// zero: the delay doubles.
const DefaultMultiplier = 2

// Policy describes one backoff. The zero Multiplier means
// DefaultMultiplier; a zero Max means no cap. A Policy is a value with no
// state: loops keep their current delay or their count of tries.
type Policy struct {
	// Initial is the first delay.
	Initial time.Duration
	// Max caps every delay (default: no cap).
	Max time.Duration
	// Multiplier is how much each delay grows on the one before
	// (default 2).
	Multiplier float64
	// Jitter spreads clients retrying together: a delay d becomes d/2
	// plus a random part up to d/2 ("equal jitter").
	Jitter bool
}

// Delay returns the wait before try attempt+1 after attempt failed tries
// (attempt 0 gives Initial): Initial grown attempt times, capped at Max,
// jittered if the policy says so.
func (p Policy) Delay(attempt int) time.Duration {
	d := p.Initial
	for i := 0; i < attempt && (p.Max <= 0 || d < p.Max); i++ {
		d = p.grow(d)
	}
	return p.jitter(p.capped(d))
}

// Next returns the wait that follows prev: prev grown once, at least
// Initial and at most Max. A loop starting from a zero prev gets Initial.
// Next does not jitter: a loop that keeps its delay keeps the unjittered
// one.
func (p Policy) Next(prev time.Duration) time.Duration {
	return p.capped(max(p.grow(prev), p.Initial))
}

func (p Policy) grow(d time.Duration) time.Duration {
	m := p.Multiplier
	if m == 0 {
		m = DefaultMultiplier
	}
	g := time.Duration(float64(d) * m)
	if g < d { // overflowed
		return p.overflow()
	}
	return g
}

func (p Policy) overflow() time.Duration {
	if p.Max > 0 {
		return p.Max
	}
	return time.Duration(1<<63 - 1)
}

func (p Policy) capped(d time.Duration) time.Duration {
	if d <= 0 && p.Initial > 0 {
		return p.overflow()
	}
	if p.Max > 0 && d > p.Max {
		return p.Max
	}
	return d
}

func (p Policy) jitter(d time.Duration) time.Duration {
	if !p.Jitter || d <= 0 {
		return d
	}
	half := d / 2
	return half + rand.N(half+1)
}
