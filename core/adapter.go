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
	// Attachments are the files sent with the message (a photo, a voice
	// note, a document, a sticker), in the platform's order; Text is then
	// the caption, and may be empty. An adapter delivers a DM with an
	// attachment even when it has no text.
	Attachments []Attachment
	// Tap is set when the message is a tap on one of the bot's buttons;
	// adapters hand such messages to TapHandler.HandleTap, not to
	// HandleInbound.
	Tap *Tap
}

// ErrInboundLost is wrapped by a handler's error when trying again cannot
// help: the message could not be kept anywhere (a full inbound spool). An
// adapter that retries stops, and says the message is lost.
var ErrInboundLost = errors.New("the inbound message could not be kept")

// InboundHandler takes normalised inbound messages from adapters;
// engine.Dispatcher implements it.
type InboundHandler interface {
	HandleInbound(ctx context.Context, msg InboundMessage) error
}

// OutboundMessage is text to deliver into a conversation.
type OutboundMessage struct {
	ConversationID  int64
	ChannelThreadID string
	ChannelUserID   string
	Text            string
	// Format says how Text is written (FormatText, the default, or
	// FormatRichText).
	Format TextFormat
	// ImageURL, set on a message of type image, is the image to show,
	// with Text as its caption. An adapter that is an ImageSender gets it
	// through SendImage; any other gets the caption and the URL as text.
	ImageURL string
	// IdempotencyKey is stable across retries of the same logical send (for
	// example "run-12" or "job-7"); platforms with a nonce use it.
	IdempotencyKey string
	// Choices are buttons to show with the text (choices.go): only for an
	// adapter whose Capabilities say Choices; the core writes them into
	// Text as numbered lines for any other.
	Choices []Choice
	// Files are sent with the message, Text their caption (outfile.go):
	// through FileSender where the adapter is one.
	Files []OutboundFile
}

// TextFormat says how an outbound message's text is written.
type TextFormat string

// Text formats.
const (
	// FormatText is text as the bot writes its replies (plain text or
	// light Markdown): each adapter shows it its platform's usual way.
	FormatText TextFormat = ""
	// FormatRichText is Markdown (emphasis, lists, links, code) to render
	// in the platform's own markup (adapters/markup); what has no equivalent
	// there is shown as plain text, never sent to fail as a parse error.
	// An adapter whose Capabilities lack RichText gets the text already
	// turned into plain text by the core.
	FormatRichText TextFormat = "rich_text"
)

// ImageSender is an optional Adapter capability: show an image by URL with
// a caption (msg.ImageURL, msg.Text in msg.Format) as one platform message
// where the platform allows (Telegram sendPhoto, a Discord embed, a Slack
// image block). Rate limits and retries are as for Send.
type ImageSender interface {
	SendImage(ctx context.Context, msg OutboundMessage) (SendResult, error)
}

// ConversationOpener is an optional Adapter capability: reach a user the
// bot has not talked with yet, for a message routed to them by the API.
// It returns the direct-message channel to store the conversation under
// (Discord and Slack open one from the user id; Telegram checks that the
// user has started the bot). A user who cannot be reached is an error
// wrapping ErrUnreachable.
type ConversationOpener interface {
	OpenConversation(ctx context.Context, req OpenRequest) (OpenedConversation, error)
}

// OpenRequest names the user to open a conversation with: ChannelUserID,
// and ChannelThreadID when the caller knows the DM channel already.
type OpenRequest struct {
	ChannelThreadID string
	ChannelUserID   string
}

// OpenedConversation is the direct-message channel an adapter opened.
type OpenedConversation struct {
	ChannelThreadID string
	ChannelUserID   string
	DisplayName     string
}

// ErrBadAddress is wrapped by OpenConversation when the request does not
// name one direct message: no user where the platform needs one, or a
// channel thread that is not the user's DM.
var ErrBadAddress = errors.New("the channel thread and user do not name one direct message")

// ErrUnreachable is wrapped by OpenConversation when the platform will not
// let the bot write to the user first (a Telegram user who never started
// the bot, an unknown user id).
var ErrUnreachable = errors.New("the user cannot be reached on this platform")

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
	// Choices is true when Send shows OutboundMessage.Choices as buttons
	// and hands their taps to the Host's HandleTap.
	Choices bool
	// RichText is true when Send renders FormatRichText in the platform's
	// markup; otherwise the core sends it as plain text.
	RichText bool
	// TypingRefresh is how often the core repeats Typing while a turn runs
	// (0: the core's default, 4s); a platform shows one indication for a
	// few seconds (Telegram 5s, Discord 10s).
	TypingRefresh time.Duration
	// IdempotencyWindow is how long the platform remembers an
	// OutboundMessage.IdempotencyKey and drops a second message with it
	// (Discord's enforced nonce: "a few minutes"); 0 when it never does.
	// A scheduled message sent again after a crash goes out a job lease
	// after the first try or a little later, so the core relies on it
	// only when the window is at least twice scheduler.job_lease.
	// Otherwise every scheduled send the platform may have taken but the
	// database has not recorded is a duplicate should the process die,
	// and the core keeps at most scheduler.max_sends_in_doubt of them per
	// platform.
	IdempotencyWindow time.Duration
	// Redelivers is true when the platform delivers a message again that
	// HandleInbound failed to take, for as long as a store outage may last
	// (Telegram keeps updates a day). For any other (Discord's gateway,
	// the web chat, Slack's three retries) the app puts an inbound spool
	// in front of the core, so that a message the store cannot take
	// waits on local disk.
	Redelivers bool
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
	Start(ctx context.Context, h Host) error
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

// ExclusiveInbound is an optional Adapter capability: an adapter whose
// intake allows one consumer at a time across all replicas (Telegram's
// long polling) names the lock it needs. The app takes that lock (a
// PostgreSQL advisory lock) before Start and holds it until Stop; without
// it the adapter does not start.
type ExclusiveInbound interface {
	// InboundLock returns the lock's name, and false when the current
	// mode needs none (Telegram webhooks, served by any replica).
	InboundLock() (name string, exclusive bool)
}

// HealthReporter is an optional Adapter capability: report connection state
// for /healthz. A nil error means healthy.
type HealthReporter interface {
	Health() error
}

// PlatformTitler is an optional Adapter capability: the platform's name
// as a sentence to the model puts it ("You are talking with Ada on
// Telegram"): "Telegram", "the web chat". An adapter without it (or with
// an empty title) gets its platform's name with the first letter
// upper-cased (Platform.Title). Plugins read it as Turn.PlatformTitle.
type PlatformTitler interface {
	PlatformTitle() string
}

// PlatformTitle names a's platform in a sentence: its PlatformTitler's
// title, or else a.Platform().Title().
func PlatformTitle(a Adapter) string {
	if pt, ok := a.(PlatformTitler); ok {
		if title := pt.PlatformTitle(); title != "" {
			return title
		}
	}
	return a.Platform().Title()
}

// Prober is an optional Adapter capability, for `parley doctor`: check,
// after Provision and Validate and without Start, that the platform is
// reachable and takes the configured credentials, with the calls Start
// would make (Telegram getMe, Discord GET /users/@me). Probe changes
// nothing on the platform and leaves nothing running: no intake, no
// connection kept, no webhook set or removed, no message sent. It
// returns a short account of what it found ("@parley_bot (id 1234)"),
// or an error a bot owner can act on: what failed and the config key to
// fix, e.g. "the token was refused (401 Unauthorized): fix
// adapters.telegram.token". Neither holds a secret. An adapter with
// nothing remote (the web chat, the terminal) does not implement it.
type Prober interface {
	Probe(ctx context.Context) (detail string, err error)
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

// A send is a reply unless marked otherwise. Scheduled messages are marked
// background, so that an adapter pacing its platform's rate limits lets a
// waiting user's reply go ahead of a burst of scheduled sends to others.
type backgroundKey struct{}

// WithBackground marks ctx as carrying a background send (a scheduled
// message): platform pacing serves replies first.
func WithBackground(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx carries a background send.
func IsBackground(ctx context.Context) bool {
	b, _ := ctx.Value(backgroundKey{}).(bool)
	return b
}
