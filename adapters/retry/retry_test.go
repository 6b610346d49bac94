package retry_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/core"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

var (
	errLimited = errors.New("429 Too Many Requests")
	errServer  = errors.New("502 Bad Gateway token=sk-secret")
	errBad     = errors.New("400 Bad Request")
)

// judge reads the test's errors as an adapter would.
func judge(err error) retry.Verdict {
	switch {
	case errors.Is(err, errLimited):
		return retry.Verdict{Kind: retry.RateLimited, After: 3 * time.Second}
	case errors.Is(err, errServer):
		return retry.Verdict{Kind: retry.Transient}
	}
	return retry.Verdict{Kind: retry.Fail, Err: errors.New("explained: " + err.Error())}
}

// skipClock fires every timer at once, moving its time on by the timer's
// duration, and notes the waits: a test sees every wait Do asks for
// without spending it.
type skipClock struct {
	now   time.Time
	waits []time.Duration
}

func (c *skipClock) Now() time.Time { return c.now }

func (c *skipClock) NewTimer(d time.Duration) core.Timer {
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (firedTimer) Stop() bool            { return false }

func policy(clock core.Clock) retry.Policy {
	return retry.Policy{RateLimits: 2, Failures: 2, Backoff: 500 * time.Millisecond, Clock: clock,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Platform: "test",
		Scrub: func(err error) error { return errors.New(strings.ReplaceAll(err.Error(), "sk-secret", "[redacted]")) }}
}

// do calls retry.Do with answers played in order (nil: success) and
// returns its result and how many calls it made.
func do(ctx context.Context, p retry.Policy, answers ...error) (string, int, error) {
	calls := 0
	v, err := retry.Do(ctx, p, "sending test message", []any{"chat", 7}, func(context.Context) (string, error) {
		i := calls
		calls++
		if i < len(answers) && answers[i] != nil {
			return "", answers[i]
		}
		return "message-1", nil
	}, judge)
	return v, calls, err
}

func TestRetriesWhatARetryCanFix(t *testing.T) {
	t.Parallel()
	clock := &skipClock{now: t0}
	v, calls, err := do(context.Background(), policy(clock), errLimited, errServer, errLimited, errServer)
	require.NoError(t, err)
	require.Equal(t, "message-1", v)
	require.Equal(t, 5, calls)
	require.Equal(t, []time.Duration{3 * time.Second, 500 * time.Millisecond, 3 * time.Second, time.Second}, clock.waits,
		"a rate limit waits what it asks; failures back off, doubling")
}

func TestGivesUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answers []error
		ctx     func() (context.Context, context.CancelFunc)
		giveUp  bool
		want    string
		calls   int
	}{
		{name: "rate limited too often", answers: []error{errLimited, errLimited, errLimited},
			want: "sending test message: still rate limited after 2 retries: 429 Too Many Requests", calls: 3},
		{name: "failing too often, secrets scrubbed", answers: []error{errServer, errServer, errServer},
			want: "sending test message: failed after 2 retries: 502 Bad Gateway token=[redacted]", calls: 3},
		{name: "an error no retry fixes", answers: []error{errServer, errBad},
			want: "explained: 400 Bad Request", calls: 2},
		{name: "a rate limit past the deadline", answers: []error{errLimited}, giveUp: true,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 2*time.Second)
			},
			want: "sending test message: rate limited for 3s, past the deadline", calls: 1},
		{name: "the caller gave up", answers: []error{errServer},
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			want: "sending test message: context canceled", calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			clock := &skipClock{now: time.Now()}
			p := policy(clock)
			p.GiveUpPastDeadline = tc.giveUp
			v, calls, err := do(ctx, p, tc.answers...)
			require.EqualError(t, err, tc.want)
			require.Empty(t, v)
			require.Equal(t, tc.calls, calls)
		})
	}
}
