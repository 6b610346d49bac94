// Package budget keeps a per-minute budget (requests or tokens) as a token
// bucket stored as the time it is full again, as GCRA does: a request
// reserves its share at once and sleeps until its turn, so waiters go in
// the order they came, each sleeping once, and nothing polls.
package budget

import "time"

// Bucket is a token bucket of Burst units refilled at PerMinute, kept as
// the time it is full again (the zero time: full). Its level at t is
// Burst - (full-t)·rate, negative while requests are reserved ahead.
type Bucket struct {
	PerMinute float64
	Burst     float64
	full      time.Time
}

// span is how long the bucket takes to refill n units.
func (b *Bucket) span(n float64) time.Duration {
	return time.Duration(n * float64(time.Minute) / b.PerMinute)
}

// Earliest is when the bucket holds n units, or is full when n is more than
// it can hold: a request larger than the whole budget waits for all of it
// and then goes, leaving a debt, rather than waiting forever.
func (b *Bucket) Earliest(n float64) time.Time {
	return b.full.Add(-b.span(b.Burst - min(n, b.Burst)))
}

// Charge takes n units at at, which is now or later (a negative n gives
// back). A bucket full before at is full at at: it holds no more than its
// burst.
func (b *Bucket) Charge(at time.Time, n float64) {
	b.full = Later(b.full, at).Add(b.span(n))
}

// Later is the later of a and b.
func Later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
