package core

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/internal/backoff"
)

// MaxInboundBytes is the longest inbound text the core keeps; longer text is
// cut at a rune boundary and the model is told so.
const MaxInboundBytes = 16 << 10

// LLM is the model as the turns engine uses it; *llm.Client implements it.
type LLM interface {
	Run(ctx context.Context, req llm.Request) (llm.Result, error)
}

// WorkListener reports work queued by any process: it calls wake with
// "runs" or "jobs" until ctx ends (returning nil) or it fails (returning
// the error; it is called again after a pause). Returning nil at once
// means there is nothing to listen to.
type WorkListener interface {
	Listen(ctx context.Context, wake func(topic string)) error
}

// Waker wakes a loop without blocking; several Wakes while the loop is
// busy count as one.
type Waker struct{ on atomic.Pointer[func()] }

// NewWaker returns a Waker.
func NewWaker() *Waker { return &Waker{} }

// OnWake makes f what Wake calls: the loop's wake (internal/loop sets it
// as the loop starts; a loop's first round runs at once, so a Wake before
// then is not missed).
func (w *Waker) OnWake(f func()) { w.on.Store(&f) }

// Wake wakes the loop.
func (w *Waker) Wake() {
	if f := w.on.Load(); f != nil {
		(*f)()
	}
}

// Metrics is told how turns, model calls, sends and jobs go, for
// /metrics.
type Metrics interface {
	// Fired records how late a job went out after its due time.
	Fired(kind JobKind, late time.Duration)
	// SendFailed records a failed scheduled send on a platform.
	SendFailed(p Platform)
	// Sent records a send of any kind (reply, notice, scheduled) on a
	// platform and its result: "ok", "error" or "permanent".
	Sent(p Platform, result string)
	// TurnFinished records a run's end and how long it ran.
	TurnFinished(kind RunKind, status RunStatus, took time.Duration)
	// ModelCalled records one call of the model by a turn: how long it
	// took, its token usage and whether it failed.
	ModelCalled(took time.Duration, usage llm.Usage, err error)
}

// DefaultContinueNudge asks the model for its continuation (WANT_MORE).
const DefaultContinueNudge = "(you want to say more)"

// LocationOf is the user's time zone: the conversation's, else fallback
// (the bot's).
func LocationOf(conv Conversation, fallback *time.Location) *time.Location {
	if conv.TimeZone != "" {
		if l, err := time.LoadLocation(conv.TimeZone); err == nil {
			return l
		}
	}
	return fallback
}

// storableText is s as every store can keep it: PostgreSQL's text type
// takes neither NUL nor invalid UTF-8, so each becomes U+FFFD (a platform
// payload may carry "\u0000", and a message the store refuses would be
// retried, or block a Telegram poller, forever).
func storableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// JobRetry spaces the tries of a job whose turn failed: a
// minute, doubling, at most 2^10 times that.
func JobRetry() backoff.Policy {
	return backoff.Policy{Initial: time.Minute, Max: time.Minute << 10}
}

// SilenceToken is what a silent turn reads as in later prompts.
const SilenceToken = "<SILENCE>"

// StorableText is s as every store can keep it: NUL and invalid UTF-8
// become U+FFFD, as in inbound messages. Text from outside that goes to
// the store by another path (the HTTP API) is cleaned with it too.
func StorableText(s string) string { return storableText(s) }
