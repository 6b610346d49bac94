// Package retry is the retry loop the platform adapters share for a call
// that creates something (a message, a DM channel): wait what a rate limit
// asks, back off after a failure the platform did not act on, give up on
// anything else. Waits go through core.Sleep, so a scheduled send gives up
// its doubt slot while it waits (see core's doubt.go).
package retry

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/backoff"
)

// Kind is what a failed attempt calls for.
type Kind int

const (
	// Fail gives up: Verdict.Err is returned as it is.
	Fail Kind = iota
	// RateLimited waits Verdict.After, then tries again.
	RateLimited
	// Transient (a 5xx, a connection never made) backs off, then tries
	// again.
	Transient
)

// Verdict is an adapter's reading of a failed attempt.
type Verdict struct {
	Kind Kind
	// After is how long a rate limit asks to wait.
	After time.Duration
	// Err is what a Fail returns (the adapter's explanation of it).
	Err error
}

// Policy bounds the retries of a call.
type Policy struct {
	// RateLimits and Failures are how many retries rate limits and
	// transient failures may have.
	RateLimits, Failures int
	// Backoff is the wait after the first transient failure, doubling.
	Backoff time.Duration
	// GiveUpPastDeadline fails at once, rather than waiting to be cut off,
	// when a rate limit asks for a wait past ctx's deadline.
	GiveUpPastDeadline bool
	Clock              core.Clock
	Log                *slog.Logger
	// Scrub takes secrets out of errors that are logged or returned.
	Scrub func(error) error
	// Platform names the platform in the rate-limit log line.
	Platform string
}

// Do calls call until it succeeds, judge gives up on its error, or the
// retries run out. what names the call in errors ("sending telegram
// message: ..."); attrs go with every retry's log line.
func Do[T any](ctx context.Context, p Policy, what string, attrs []any, call func(context.Context) (T, error), judge func(error) Verdict) (T, error) {
	var zero T
	rateLimited, failures := 0, 0
	for {
		v, err := call(ctx)
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return zero, fmt.Errorf("%s: %w", what, ctx.Err())
		}
		var wait time.Duration
		switch verdict := judge(err); verdict.Kind {
		case RateLimited:
			if rateLimited >= p.RateLimits {
				return zero, fmt.Errorf("%s: still rate limited after %d retries: %w", what, rateLimited, p.Scrub(err))
			}
			rateLimited++
			wait = verdict.After
			if deadline, ok := ctx.Deadline(); ok && p.GiveUpPastDeadline && p.Clock.Now().Add(wait).After(deadline) {
				return zero, fmt.Errorf("%s: rate limited for %s, past the deadline", what, wait)
			}
			p.Log.Info(p.Platform+" rate limit, waiting", append(slices.Clip(attrs), "retry_after", wait)...)
		case Transient:
			if failures >= p.Failures {
				return zero, fmt.Errorf("%s: failed after %d retries: %w", what, failures, p.Scrub(err))
			}
			wait = backoff.Policy{Initial: p.Backoff}.Delay(failures)
			failures++
			p.Log.Warn(what+" failed, retrying", append(slices.Clip(attrs), "err", p.Scrub(err), "retry_in", wait)...)
		default:
			return zero, verdict.Err
		}
		if !core.Sleep(ctx, p.Clock, wait) {
			return zero, fmt.Errorf("%s: %w", what, ctx.Err())
		}
	}
}
