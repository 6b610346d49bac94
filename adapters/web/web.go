package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

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
	_ core.Streamer        = (*Adapter)(nil)
	_ core.StreamModer     = (*Adapter)(nil)
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
	// Streaming is how a reply grows on the page while the model writes
	// it: auto or edits (the same here: partial text over the page's
	// event stream) or off (each reply arrives whole) (default auto).
	Streaming string `yaml:"streaming"`
	// Uploads are the files users send from the page (default: up to
	// 10 MiB each, in the user's cache directory).
	Uploads Uploads `yaml:"uploads"`

	// The parts, each with one job; they share *state. Embedding promotes
	// the methods core's interfaces ask for (Mount, Send, Typing, Stream).
	*state
	*routes     // the chat page, its posts, event streams and history
	*sender     // Send, Typing: pushing to the open pages
	*streamer   // Stream: replies growing on the open pages
	uploadStore // FetchAttachment, EraseThread: the files users upload
}

// New returns a web adapter with its defaults set. It has no side effects.
func New() *Adapter {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	a := &Adapter{
		Title:     "Parley",
		Limits:    DefaultLimits(),
		Streaming: streamAuto,
		Uploads:   Uploads{MaxBytes: DefaultUploadBytes, MaxTotalBytes: DefaultUploadTotalBytes},
	}
	st := &state{
		cfg:          a,
		log:          slog.New(slog.DiscardHandler),
		clock:        core.SystemClock{},
		botName:      "Parley",
		idPrefix:     hex.EncodeToString(b[:]),
		pingEvery:    15 * time.Second,
		writeTimeout: 10 * time.Second,
		hub:          newHub(),
		files:        &shelf{},
	}
	a.state, a.routes, a.sender, a.uploadStore = st, &routes{st}, &sender{st}, uploadStore{st}
	a.streamer = &streamer{a.sender}
	return a
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
	return core.Capabilities{MaxMessageLength: maxMessageLength, Markup: "html", Typing: true, RichText: true, Choices: true}
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
	if a.Uploads.Dir == "" {
		a.Uploads.Dir = defaultUploadsDir(env.BotID)
	}
	return nil
}

// Validate checks the decoded config.
func (a *Adapter) Validate() error {
	if strings.TrimSpace(a.Title) == "" {
		return errors.New("web adapter: title must not be empty")
	}
	if err := validStreaming(a.Streaming); err != nil {
		return err
	}
	if err := a.Limits.validate(); err != nil {
		return err
	}
	if a.Uploads.MaxBytes < 0 || a.Uploads.MaxTotalBytes < 0 {
		return errors.New("web adapter: uploads.max_bytes and max_total_bytes must not be negative (0: no files; no bound)")
	}
	for _, o := range a.AllowedOrigins {
		if _, err := normalOrigin(o); err != nil {
			return fmt.Errorf("web adapter: allowed_origins: %q: %w", o, err)
		}
	}
	return nil
}

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
	// Choices are the buttons under a question (its last part).
	Choices []wireChoice `json:"choices,omitempty"`
	// Files are the files the message carries (its last part).
	Files []wireFile `json:"files,omitempty"`
}

// wireChoice is a button: what it shows, and what the page posts back to
// POST /web/taps when it is tapped.
type wireChoice struct {
	Label string `json:"label"`
	Data  string `json:"data"`
}

// wireChoices are choices as the page gets them.
func wireChoices(choices []core.Choice) []wireChoice {
	out := make([]wireChoice, len(choices))
	for i, c := range choices {
		out[i] = wireChoice{Label: c.Label, Data: c.Data}
	}
	return out
}
