// Package fakelimit is the per-chat rate limit the fake platforms
// (telegramtest, discordtest, slacktest) answer 429 above: a token bucket
// per chat or channel.
package fakelimit

import "time"

// Buckets holds a token bucket per key: Burst messages at once, then one
// more every Every. Each is kept as the time it is full again (GCRA's
// theoretical arrival time), not as fractional tokens, so that a message
// exactly on time is never refused by rounding. A zero Burst or Every is
// no limit. It is not safe for concurrent use: the fakes hold their own
// lock.
type Buckets struct {
	Burst int
	Every time.Duration
	full  map[string]time.Time
}

// Wait is how long from now until key may take one more message; 0 when
// it may now.
func (b *Buckets) Wait(key string, now time.Time) time.Duration {
	if b.Burst <= 0 || b.Every <= 0 {
		return 0
	}
	full := b.full[key]
	if full.Before(now) {
		full = now
	}
	return max(0, full.Sub(now)-time.Duration(b.Burst-1)*b.Every)
}

// Take takes one message for key at now (after Wait said it may).
func (b *Buckets) Take(key string, now time.Time) {
	if b.Burst <= 0 || b.Every <= 0 {
		return
	}
	if b.full == nil {
		b.full = map[string]time.Time{}
	}
	full := b.full[key]
	if full.Before(now) {
		full = now
	}
	b.full[key] = full.Add(b.Every)
}
