package telegramtest

import (
	"context"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakelimit"
)

// RateLimits are Telegram-like flood limits on the methods that create a
// message (sendMessage, sendPhoto). A call over them is answered 429
// "Too Many Requests: retry after N" with parameters.retry_after N, and
// does not count against them; a call let through counts whatever its
// answer. Time is the server's clock (WithNow; the wall clock by
// default). A zero field is no limit.
type RateLimits struct {
	// PerSecond is the bot-wide limit: a sliding window, at most this many
	// calls let through in any one second (a call at t counts against the
	// calls let through in (t-1s, t]). Telegram asks bots to stay under 30
	// messages a second; a window, unlike a token bucket, lets no burst
	// over that, so a bot that meets it meets it in every second.
	PerSecond int
	// PerChatPerSecond and PerChatBurst are a token bucket per chat_id:
	// PerChatBurst calls at once (0: 1), then PerChatPerSecond.
	PerChatPerSecond float64
	PerChatBurst     int
	// Partials makes editMessageText and sendMessageDraft count against
	// the same limits (and SendStats). Telegram's flood control answers
	// edits 429 too; whether drafts count is not documented.
	Partials bool
}

// TelegramRateLimits are Telegram's documented limits: 30 messages a
// second per bot, and in one chat about one a second (a burst of 3
// passes).
func TelegramRateLimits() RateLimits {
	return RateLimits{PerSecond: 30, PerChatPerSecond: 1, PerChatBurst: 3}
}

// WithLatency makes every Bot API call take d as a round trip: the call
// is handled d/2 after it arrives and answered d/2 later, in wall time
// whatever WithNow says (it stands for the network). File downloads are
// not delayed.
func WithLatency(d time.Duration) Option {
	return func(s *Server) { s.latency = d }
}

// WithRateLimits applies l to the methods that create a message.
func WithRateLimits(l RateLimits) Option {
	return func(s *Server) { s.limiter.set(l) }
}

// throttle sets the network's latency and the flood limits, and counts
// what the limits saw.
type throttle struct{ *state }

// SetLatency changes the round trip of the calls that arrive from now on.
func (s *throttle) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// SetRateLimits changes the rate limits (and forgets what was counted
// against the old ones; the counters of SendStats stay).
func (s *throttle) SetRateLimits(l RateLimits) { s.limiter.set(l) }

// SendStats counts the calls of the methods that create a message.
type SendStats struct {
	// Attempts is every call with the right token, whatever its answer.
	Attempts int
	// RateLimited is how many of them the RateLimits answered 429.
	RateLimited int
}

// SendStats returns the counters of message-creating calls.
func (s *throttle) SendStats() SendStats {
	s.limiter.mu.Lock()
	defer s.limiter.mu.Unlock()
	return s.limiter.stats
}

// createsMessage reports whether a (lower-cased) method creates a message,
// so that the rate limits apply to it.
func createsMessage(method string) bool {
	switch method {
	case "sendmessage", "sendphoto", "senddocument", "sendvoice", "sendaudio":
		return true
	}
	return false
}

// limited reports whether the rate limits apply to a (lower-cased)
// method: one that creates a message, or with Partials an edit or draft.
func (l *limiter) limited(method string) bool {
	if createsMessage(method) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limits.Partials && (method == "editmessagetext" || method == "sendmessagedraft")
}

// limiter enforces RateLimits.
type limiter struct {
	mu     sync.Mutex
	limits RateLimits
	// window holds the times of the calls let through in the last second,
	// oldest first.
	window []time.Time
	chats  fakelimit.Buckets
	stats  SendStats
}

func (l *limiter) set(r RateLimits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits, l.window, l.chats = r, nil, fakelimit.Buckets{}
	if r.PerChatPerSecond > 0 {
		l.chats = fakelimit.Buckets{Burst: max(r.PerChatBurst, 1), Every: time.Duration(float64(time.Second) / r.PerChatPerSecond)}
	}
}

// admit counts a message-creating call to chat at now and returns the 429
// to answer it with, if it is over the limits.
func (l *limiter) admit(chat string, now time.Time) *Fault {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Attempts++
	lim := l.limits
	var wait time.Duration
	if lim.PerSecond > 0 {
		drop := 0
		for drop < len(l.window) && !l.window[drop].After(now.Add(-time.Second)) {
			drop++
		}
		l.window = l.window[drop:]
		if len(l.window) >= lim.PerSecond {
			wait = l.window[len(l.window)-lim.PerSecond].Add(time.Second).Sub(now)
		}
	}
	wait = max(wait, l.chats.Wait(chat, now))
	if wait > 0 {
		l.stats.RateLimited++
		// Telegram's retry_after is whole seconds, at least one.
		f := TooManyRequests(max(1, int(math.Ceil(wait.Seconds()))))
		return &f
	}
	if lim.PerSecond > 0 {
		l.window = append(l.window, now)
	}
	l.chats.Take(chat, now)
	return nil
}

// halfTrip waits half the latency of a call; false when the client left
// or the server closed first.
func (s *throttle) halfTrip(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d / 2)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// lateWriter answers after the second half of the round trip: it waits
// before the status line goes out.
type lateWriter struct {
	http.ResponseWriter
	wait func()
	once sync.Once
}

func (w *lateWriter) WriteHeader(code int) {
	w.once.Do(w.wait)
	w.ResponseWriter.WriteHeader(code)
}

func (w *lateWriter) Write(b []byte) (int, error) {
	w.once.Do(w.wait)
	return w.ResponseWriter.Write(b)
}
