package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

func init() {
	// The web chat is on unless the config turns it off.
	core.RegisterAdapter(core.AdapterInfo{Name: "web", New: func() core.Adapter { return New() }, EnabledByDefault: true})
}

// Platform is the platform this adapter serves: the core.Platform of its
// conversations and of the API's channel_type "web".
const Platform core.Platform = "web"

// Interface guards.
var (
	_ core.Adapter         = (*Adapter)(nil)
	_ core.HTTPMounter     = (*Adapter)(nil)
	_ core.TypingIndicator = (*Adapter)(nil)
	_ core.Provisioner     = (*Adapter)(nil)
	_ core.Validator       = (*Adapter)(nil)
	_ core.PlatformTitler  = (*Adapter)(nil)
)

// maxMessageLength is the longest part Send pushes to a browser, in runes.
const maxMessageLength = 16000

// errStopped is returned by Send once the adapter has stopped.
var errStopped = errors.New("web adapter is stopped")

// Adapter is the browser chat. Create it with New.
type Adapter struct {
	// Title is the chat page's title (default "Parley").
	Title string `yaml:"title"`
	// Limits bound posts and event streams per browser, per address and
	// in all (default DefaultLimits; 0 turns one off).
	Limits Limits `yaml:"limits"`
	// AllowedOrigins are origins ("https://chat.example.com") whose pages
	// may post too, besides the chat's own (default none): for a reverse
	// proxy that passes the bot another Host than the browser asked for.
	AllowedOrigins []string `yaml:"allowed_origins"`

	log     *slog.Logger
	clock   core.Clock
	botName string
	// idPrefix makes platform message ids unique across restarts, so a
	// page that de-duplicates by id never mistakes a new reply for an old
	// one from the history.
	idPrefix     string
	seq          atomic.Uint64
	pingEvery    time.Duration
	writeTimeout time.Duration
	hub          *hub

	// guardsOnce builds guards from the decoded config on first use.
	guardsOnce sync.Once
	guardSet   *guards

	mu      sync.Mutex
	handler core.Host
	started bool
	stopped bool
}

// New returns a web adapter with its defaults set. It has no side effects.
func New() *Adapter {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return &Adapter{
		Title:        "Parley",
		Limits:       DefaultLimits(),
		log:          slog.New(slog.DiscardHandler),
		clock:        core.SystemClock{},
		botName:      "Parley",
		idPrefix:     hex.EncodeToString(b[:]),
		pingEvery:    15 * time.Second,
		writeTimeout: 10 * time.Second,
		hub:          newHub(),
	}
}

// Name returns "web".
func (a *Adapter) Name() string { return "web" }

// Platform returns Platform.
func (a *Adapter) Platform() core.Platform { return Platform }

// PlatformTitle is how the model hears the platform named: "the web chat".
func (a *Adapter) PlatformTitle() string { return "the web chat" }

// Capabilities reports rich text (Markdown shown as sanitised HTML), text
// up to 16000 runes per part, and typing.
func (a *Adapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: maxMessageLength, Markup: "html", Typing: true, RichText: true}
}

// Provision takes the logger, clock and bot name from the host.
func (a *Adapter) Provision(_ context.Context, env core.Env) error {
	if env.Logger != nil {
		a.log = env.Logger.With("adapter", "web")
	}
	if env.Clock != nil {
		a.clock = env.Clock
	}
	if name := strings.TrimSpace(env.BotName); name != "" {
		a.botName = name
	}
	return nil
}

// Validate checks the decoded config.
func (a *Adapter) Validate() error {
	if strings.TrimSpace(a.Title) == "" {
		return errors.New("web adapter: title must not be empty")
	}
	if err := a.Limits.validate(); err != nil {
		return err
	}
	for _, o := range a.AllowedOrigins {
		if _, err := normalOrigin(o); err != nil {
			return fmt.Errorf("web adapter: allowed_origins: %q: %w", o, err)
		}
	}
	return nil
}

// guards returns the limits and origin checks, built from the config the
// first time a request needs them (after decoding and Validate).
func (a *Adapter) guards() *guards {
	a.guardsOnce.Do(func() { a.guardSet = newGuards(a.Limits, a.AllowedOrigins) })
	return a.guardSet
}

// OpenStreams is how many event streams (GET /web/events) are open now.
func (a *Adapter) OpenStreams() int { return a.hub.openStreams() }

// Start begins accepting messages from browsers and handing them to h. The
// routes must be mounted (Mount) for browsers to reach the adapter.
func (a *Adapter) Start(ctx context.Context, h core.Host) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting web adapter: %w", err)
	}
	if h == nil {
		return errors.New("starting web adapter: nil inbound handler")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.stopped:
		return errors.New("starting web adapter: already stopped")
	case a.started:
		return errors.New("starting web adapter: already started")
	}
	a.handler = h
	a.started = true
	return nil
}

// Stop refuses further messages (503), ends every open event stream and
// waits, bounded by ctx, for their handlers to return.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	a.hub.close()
	if err := a.hub.wait(ctx); err != nil {
		return fmt.Errorf("stopping web adapter: %w", err)
	}
	return nil
}

// Send pushes msg.Text to every open page of the client
// msg.ChannelThreadID and returns one id per part. Rich text
// (core.FormatRichText, Markdown) goes whole, as one message carrying the
// Markdown and its sanitised HTML (markup.HTML): a browser has no length
// limit worth cutting formatting for. Text goes as written, split to
// 16000-rune parts. A client with no page open is not an error: the core
// has stored the message and the page shows it from the history when it
// loads.
func (a *Adapter) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending to web client: %w", err)
	}
	if a.isStopped() {
		return core.SendResult{}, fmt.Errorf("sending to web client: %w", errStopped)
	}
	if msg.ChannelThreadID == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "no channel thread id"}
	}
	parts := textParts(msg)
	if len(parts) == 0 {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	at := a.clock.Now().UTC().Format(time.RFC3339)
	ids := make([]string, len(parts))
	evs := make([]event, len(parts))
	for i, p := range parts {
		ids[i] = a.nextID()
		p.ID, p.Role, p.At = ids[i], string(core.RoleAssistant), at
		data, err := json.Marshal(p)
		if err != nil {
			return core.SendResult{}, fmt.Errorf("encoding web message: %w", err)
		}
		evs[i] = event{name: "message", data: data}
	}
	n := a.hub.publish(msg.ChannelThreadID, evs, true)
	a.log.Debug("message pushed", "thread", msg.ChannelThreadID, "parts", len(parts), "pages", n)
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// Typing shows the typing indicator on every open page of the client. It is
// best effort: a page too busy to take the signal just misses it.
func (a *Adapter) Typing(_ context.Context, channelThreadID string) error {
	a.hub.publish(channelThreadID, []event{{name: "typing", data: []byte("{}")}}, false)
	return nil
}

// textParts is msg as the messages to push, without id, role or time.
func textParts(msg core.OutboundMessage) []wireMessage {
	if msg.Format == core.FormatRichText {
		html := markup.HTML(msg.Text)
		if strings.TrimSpace(html) == "" {
			return nil
		}
		return []wireMessage{{Text: msg.Text, HTML: html}}
	}
	var out []wireMessage
	for _, p := range core.SplitText(msg.Text, maxMessageLength) {
		out = append(out, wireMessage{Text: p})
	}
	return out
}

// wireMessage is a message as the page sees it, in events and history.
type wireMessage struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Text is the message as written: Markdown for the model's replies.
	Text string `json:"text"`
	// HTML is Text rendered and sanitised, for a message in Markdown; the
	// page shows it instead of Text.
	HTML string `json:"html,omitempty"`
	At   string `json:"at"`
}

// nextID returns a fresh platform message id, "w-<instance>-<n>".
func (a *Adapter) nextID() string {
	return "w-" + a.idPrefix + "-" + strconv.FormatUint(a.seq.Add(1), 10)
}

func (a *Adapter) isStopped() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped
}

// inboundHandler returns the host, or nil when not accepting messages.
func (a *Adapter) inboundHandler() core.Host {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil
	}
	return a.handler
}
