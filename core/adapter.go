package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// InboundMessage is a direct message as an adapter normalised it.
type InboundMessage struct {
	Platform          Platform
	ChannelThreadID   string
	ChannelUserID     string
	DisplayName       string
	Text              string
	PlatformMessageID string
	SentAt            time.Time
	// Direct is true for a one-to-one DM. Adapters drop everything else, and
	// the core ignores a message that is not direct as a second guard.
	Direct bool
}

// InboundHandler takes normalised inbound messages from adapters. The core's
// Dispatcher implements it.
type InboundHandler interface {
	HandleInbound(ctx context.Context, msg InboundMessage) error
}

// OutboundMessage is text to deliver into a conversation.
type OutboundMessage struct {
	ConversationID  int64
	ChannelThreadID string
	ChannelUserID   string
	Text            string
	// IdempotencyKey is stable across retries of the same logical send (for
	// example "run-12" or "job-7"); platforms with a nonce use it.
	IdempotencyKey string
}

// SendResult reports what the platform accepted, one id per part in order.
type SendResult struct {
	PlatformMessageIDs []string
}

// Capabilities describe what a platform can show.
type Capabilities struct {
	// MaxMessageLength is the longest text one platform message may hold, in
	// characters (runes); longer text is split.
	MaxMessageLength int
	// Markup names the markup the platform renders ("plain", "markdown",
	// "mrkdwn", "html").
	Markup string
	// Typing is true when the adapter implements TypingIndicator.
	Typing bool
	// TypingRefresh is how often the core repeats Typing while a turn runs
	// (0: the core's default, 4s); a platform shows one indication for a
	// few seconds (Telegram 5s, Discord 10s).
	TypingRefresh time.Duration
}

// Adapter connects one platform to the core. Send splits text over the
// platform's limit, honours rate limits and never drops a message it can
// still deliver.
type Adapter interface {
	// Name is the adapter instance name, e.g. "telegram" or "web".
	Name() string
	Platform() Platform
	Capabilities() Capabilities
	// Start connects and begins delivering inbound DMs to h. It returns once
	// the adapter is ready; its background work stops when Stop is called.
	Start(ctx context.Context, h InboundHandler) error
	Send(ctx context.Context, msg OutboundMessage) (SendResult, error)
	// Stop stops intake and background work and returns promptly.
	Stop(ctx context.Context) error
}

// TypingIndicator is an optional Adapter capability: show that the bot is
// composing a reply in a conversation.
type TypingIndicator interface {
	Typing(ctx context.Context, channelThreadID string) error
}

// HTTPMounter is an optional Adapter capability: serve routes on Parley's
// HTTP server (web chat, platform webhooks).
type HTTPMounter interface {
	Mount(mux *http.ServeMux)
}

// HealthReporter is an optional Adapter capability: report connection state
// for /healthz. A nil error means healthy.
type HealthReporter interface {
	Health() error
}

// PermanentError is a send failure that retrying cannot fix (the user blocked
// the bot, the chat does not exist). The core records it and stops retrying.
type PermanentError struct {
	Reason string
	Err    error
}

func (e *PermanentError) Error() string {
	if e.Err == nil {
		return "permanent send failure: " + e.Reason
	}
	return fmt.Sprintf("permanent send failure: %s: %v", e.Reason, e.Err)
}

func (e *PermanentError) Unwrap() error { return e.Err }

// IsPermanent reports whether err is, or wraps, a PermanentError.
func IsPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe)
}
