package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

// retryTransport retries 429, 5xx and connection errors below go-openai,
// which cannot see response headers and so could not honour Retry-After.
// Each attempt gets its own timeout; a per-attempt timeout is not retried,
// since a server that is that slow would keep the user waiting several times
// over.
type retryTransport struct {
	lim        *limits
	q          *queue // this client's turn for lim's slots
	base       http.RoundTripper
	timeout    time.Duration
	maxRetries int
	baseDelay  time.Duration
	maxDelay   time.Duration
	sleep      func(context.Context, time.Duration) error
	now        func() time.Time
	log        *slog.Logger
	redact     redactor
}

// attemptsKey carries a counter through go-openai so the Client can tell how
// many attempts a failed request took.
type attemptsKey struct{}

func withAttempts(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptsKey{}, n), n
}

// maxDrain bounds how much of a discarded response body is read so the
// connection can be reused.
const maxDrain = 64 << 10

// RoundTrip sends req, retrying as configured. Every attempt first waits
// its turn under the client's limits (see limits.acquire).
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	counter, _ := ctx.Value(attemptsKey{}).(*atomic.Int32)
	pace := pacingOf(ctx)
	// waited is the end of the 429 pause this request has slept out
	// itself, so that its retry does not wait for it twice.
	var waited int64
	// A request sent again after its streamed answer broke goes on
	// counting where the broken one stopped: one retry budget for both.
	start := 0
	if counter != nil {
		start = int(counter.Load())
	}
	for attempt := start; ; attempt++ {
		if counter != nil {
			counter.Store(int32(attempt + 1))
		}
		r, err := t.attemptRequest(req, attempt)
		if err != nil {
			return nil, err
		}
		s, err := t.lim.acquire(ctx, t.q, pace, waited)
		if err != nil {
			if r.Body != nil {
				_ = r.Body.Close() // a RoundTripper closes the body, sent or not
			}
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, t.timeout)
		resp, err := t.base.RoundTrip(r.WithContext(actx))
		if err != nil {
			cancel()
			s.release()
			if err := t.noResponse(ctx, actx, req, attempt, err); err != nil {
				return nil, err
			}
			continue
		}

		retry, delay, fromHeader := t.statusRetry(req, resp, attempt)
		if resp.StatusCode == http.StatusTooManyRequests && delay > 0 {
			waited = t.pauseAll(ctx, delay, fromHeader)
		}
		if retry {
			_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
			_ = resp.Body.Close()
			cancel()
			s.release()
			t.log.WarnContext(ctx, "llm: retrying after error status",
				"status", resp.StatusCode, "attempt", attempt+1, "delay", delay, "retry_after", fromHeader)
			if err := t.sleep(ctx, delay); err != nil {
				return nil, err
			}
			continue
		}

		// The attempt's context must outlive RoundTrip: cancelling it now
		// would cut off the body go-openai is about to read. Its slot is
		// held until the body is closed, too: the request is in flight
		// until then.
		resp.Body = &attemptBody{ReadCloser: resp.Body, ctx: ctx, actx: actx, cancel: cancel, slot: s, t: t}
		return resp, nil
	}
}

// noResponse follows an attempt that got no response (err; actx was the
// attempt's context): the error to return, or nil once it is time to try
// again.
func (t *retryTransport) noResponse(ctx, actx context.Context, req *http.Request, attempt int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(actx.Err(), context.DeadlineExceeded) {
		return t.timeoutError()
	}
	if attempt >= t.maxRetries || !replayable(req) {
		return &Error{
			Message:   fmt.Sprintf("llm: request failed%s: %s", attemptsText(attempt+1), t.redact.clean(err.Error())),
			Retryable: true,
			Err:       t.redact.wrap(err),
			health:    HealthUnreachable,
		}
	}
	delay := t.backoff(attempt)
	t.log.WarnContext(ctx, "llm: retrying after connection error",
		"attempt", attempt+1, "delay", delay, "error", t.redact.clean(err.Error()))
	return t.sleep(ctx, delay)
}

// statusRetry reports whether resp's status is tried again, and the delay
// before (for a retry or a 429): the server's Retry-After (fromHeader),
// else the backoff.
func (t *retryTransport) statusRetry(req *http.Request, resp *http.Response, attempt int) (retry bool, delay time.Duration, fromHeader bool) {
	retry = retryableStatus(resp.StatusCode) && attempt < t.maxRetries && replayable(req)
	if retry || resp.StatusCode == http.StatusTooManyRequests {
		delay, fromHeader = t.retryAfter(resp.Header.Get("Retry-After"))
		if !fromHeader {
			delay = t.backoff(attempt)
		}
	}
	return retry, delay, fromHeader
}

// pauseAll makes every request of the client wait delay after a 429, and
// returns when the pause ends (Unix nanoseconds).
func (t *retryTransport) pauseAll(ctx context.Context, delay time.Duration, fromHeader bool) int64 {
	// The server is over its limit for every request of this client,
	// not just this one: all of them wait until it said. The limits'
	// clock, which a Transcriber sharing them shares.
	now := t.lim.now()
	until := now.Add(delay)
	if t.lim.pause(now, until) {
		t.log.WarnContext(ctx, "llm: the model server is rate limiting (429): every request waits",
			"delay", delay, "retry_after", fromHeader)
	}
	return until.UnixNano()
}

// attemptRequest returns the request for an attempt: the original first,
// then clones with a fresh body.
func (t *retryTransport) attemptRequest(req *http.Request, attempt int) (*http.Request, error) {
	if attempt == 0 {
		return req, nil
	}
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, &Error{Message: "llm: replaying request body: " + err.Error(), Err: err}
		}
		r.Body = body
	}
	return r, nil
}

// replayable reports whether req can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}

func (t *retryTransport) timeoutError() error {
	return &Error{
		Message:   fmt.Sprintf("llm: request timed out (timeout %s)", t.timeout),
		Retryable: true,
		Timeout:   true,
		Err:       context.DeadlineExceeded,
		health:    HealthUnreachable,
	}
}

// backoff is exponential with jitter: half the doubled delay plus a random
// part up to the other half, so clients retrying together spread out.
func (t *retryTransport) backoff(attempt int) time.Duration {
	return retryBackoff(t.baseDelay, t.maxDelay, attempt)
}

// retryBackoff is the wait after attempt (0: the first) failed, for the
// transport and for a broken stream alike.
func retryBackoff(base, maxDelay time.Duration, attempt int) time.Duration {
	return backoff.Policy{Initial: base, Max: maxDelay, Jitter: true}.Delay(attempt)
}

// retryAfter parses a Retry-After value (delta-seconds or HTTP-date), capped
// at maxDelay; ok is false when the header is absent or unreadable.
func (t *retryTransport) retryAfter(v string) (d time.Duration, ok bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || math.IsNaN(secs) {
			return 0, false
		}
		if secs > t.maxDelay.Seconds() {
			return t.maxDelay, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	when, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d = when.Sub(t.now())
	return min(max(d, 0), t.maxDelay), true
}

// attemptBody releases the attempt's context when the body is closed and
// reports a read cut off by the attempt timeout as a timeout.
type attemptBody struct {
	io.ReadCloser
	ctx    context.Context // the caller's
	actx   context.Context // the attempt's
	cancel context.CancelFunc
	slot   *slot
	t      *retryTransport
}

func (b *attemptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx.Err() == nil && errors.Is(b.actx.Err(), context.DeadlineExceeded) {
		return n, b.t.timeoutError()
	}
	return n, err
}

func (b *attemptBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	b.slot.release()
	return err
}
