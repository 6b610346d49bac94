package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

func init() {
	core.RegisterAdapter(core.AdapterInfo{Name: "discord", New: func() core.Adapter { return New() }})
}

// Platform is the platform this adapter serves: the core.Platform of its
// conversations and of the API's channel_type "discord".
const Platform core.Platform = "discord"

// Interface guards.
var (
	_ core.Adapter         = (*Adapter)(nil)
	_ core.TypingIndicator = (*Adapter)(nil)
	_ core.HealthReporter  = (*Adapter)(nil)
	_ core.Provisioner     = (*Adapter)(nil)
	_ core.Validator       = (*Adapter)(nil)
	_ core.PlatformTitler  = (*Adapter)(nil)
	_ core.Streamer        = (*Adapter)(nil)
	_ core.StreamModer     = (*Adapter)(nil)
	_ core.MessageEditor   = (*Adapter)(nil)
	_ core.Reactor         = (*Adapter)(nil)
	_ core.Unreactor       = (*Adapter)(nil)
)

const (
	// maxMessageLength is Discord's limit for one message, in Unicode code
	// points.
	maxMessageLength = 2000
	// typingRefresh repeats the typing indication before Discord's 10
	// seconds run out.
	typingRefresh = 8 * time.Second
)

// errStopped is why the adapter's work ends when Stop is called.
var errStopped = errors.New("discord adapter stopped")

// Adapter is the Discord bot. Create it with New; its exported fields are
// its config (adapters.discord in YAML).
type Adapter struct {
	// Token is the bot token from the Discord developer portal, without
	// the "Bot " prefix (required).
	Token config.Secret `yaml:"token"`
	// APIURL is the origin the REST API (/api/v9/...) and the gateway
	// discovery are requested from (default "": https://discord.com).
	APIURL string `yaml:"api_url"`
	// ShardID and ShardCount split the gateway between replicas: each
	// replica runs one shard, shard_id of shard_count (default 0 of 1).
	// Discord sends every DM to shard 0: the replica running it takes the
	// DMs in; any replica sends.
	ShardID    int `yaml:"shard_id"`
	ShardCount int `yaml:"shard_count"`
	// SendRate paces the messages the bot creates, so that Discord's
	// limits are kept rather than found by 429s (default: 5 per 5 s per
	// channel, a burst of 5 and then one a second; no bot-wide limit of
	// the adapter's own, since discordgo keeps Discord's global bucket).
	SendRate pace.Limits `yaml:"send_rate"`
	// Streaming is how a reply shows while the model writes it: auto or
	// edits, a message created with the first words and edited as it
	// grows (the default); off sends replies whole.
	Streaming string `yaml:"streaming"`

	// The parts, each with one job; they share *state. Embedding promotes
	// the methods core's interfaces ask for (Send, Typing, Health…).
	*state
	*gateway  // the gateway connection and the messages it brings
	*sender   // Send, SendImage, Typing: splitting, pacing, retries
	*opener   // OpenConversation, OpenDM
	*fetcher  // FetchAttachment
	*streamer // Stream, EditMessage, DeleteMessage: replies grown by edits
}

// New returns a Discord adapter with its defaults set. It has no side
// effects: nothing connects before Start.
func New() *Adapter {
	a := &Adapter{
		// Discord allows 5 messages per 5 s in a channel, and replenishes
		// them one by one.
		SendRate:  pace.Limits{PerChatPerSecond: 1, PerChatBurst: 5},
		Streaming: streamingAuto,
	}
	st := &state{
		cfg:                 a,
		log:                 slog.New(slog.DiscardHandler),
		clock:               core.SystemClock{},
		sendTimeout:         60 * time.Second,
		maxRateLimitRetries: 5,
		maxServerRetries:    3,
		serverBackoff:       500 * time.Millisecond,
		reconnectMin:        time.Second,
		reconnectMax:        2 * time.Minute,
		edits:               newEditGate(),
	}
	a.state = st
	a.gateway, a.sender, a.opener, a.fetcher = &gateway{st}, &sender{st}, &opener{st}, &fetcher{st}
	a.streamer = &streamer{st}
	return a
}

// Name returns "discord".
func (a *Adapter) Name() string { return "discord" }

// Platform returns Platform.
func (a *Adapter) Platform() core.Platform { return Platform }

// PlatformTitle is how the model hears the platform named: "Discord".
func (a *Adapter) PlatformTitle() string { return "Discord" }

// Capabilities reports 2000-character Markdown messages, rich text, a
// typing indicator that lasts 10 seconds (refreshed every 8), buttons
// (choices, taps.go), and sends a repeat of which Discord drops (the
// enforced nonce).
func (a *Adapter) Capabilities() core.Capabilities {
	return core.Capabilities{
		MaxMessageLength: maxMessageLength,
		Markup:           "markdown",
		Typing:           true,
		Choices:          true,
		RichText:         true,
		TypingRefresh:    typingRefresh,
		// Discord checks an enforced nonce "in the past few minutes";
		// two is the most this adapter relies on.
		IdempotencyWindow: nonceWindow,
	}
}

// Provision takes the logger and clock from the host.
func (a *Adapter) Provision(_ context.Context, env core.Env) error {
	if env.Logger != nil {
		a.log = env.Logger.With("adapter", "discord")
	}
	if env.Clock != nil {
		a.clock = env.Clock
	}
	return nil
}

// Validate checks the decoded config. Its messages never show the token.
func (a *Adapter) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("discord adapter: "+format, args...))
	}
	tok := a.Token.Reveal()
	switch {
	case strings.TrimSpace(tok) == "":
		bad("token is required (set adapters.discord.token, e.g. ${DISCORD_BOT_TOKEN})")
	case strings.ContainsFunc(tok, unicode.IsSpace):
		bad(`token must not contain spaces (give the bare bot token, without "Bot ")`)
	}
	if a.APIURL != "" {
		if _, err := parseOrigin(a.APIURL); err != nil {
			bad("api_url %v", err)
		}
	}
	switch {
	case a.ShardCount < 0:
		bad("shard_count must be at least 1, got %d", a.ShardCount)
	case a.ShardID < 0 || a.ShardID >= max(a.ShardCount, 1):
		bad("shard_id must be from 0 to shard_count-1 (%d), got %d", max(a.ShardCount, 1)-1, a.ShardID)
	}
	switch a.Streaming {
	case "", streamingAuto, streamingEdits, streamingOff:
	default:
		bad("adapters.discord.streaming must be auto, edits or off, got %q", a.Streaming)
	}
	if err := a.SendRate.Validate("adapters.discord.send_rate"); err != nil {
		// One line per problem, each under the adapter's prefix.
		problems := []error{err}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			problems = joined.Unwrap()
		}
		for _, p := range problems {
			bad("%v", p)
		}
	}
	return errors.Join(errs...)
}

// parseOrigin reads api_url: an http or https origin, with nothing after
// the host (discordgo adds /api/v9/...).
func parseOrigin(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return nil, fmt.Errorf("must be an http or https URL, got %q", raw)
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return nil, fmt.Errorf("must be an origin like https://discord.com, without path, query or user, got %q", raw)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// Start checks the token with GET /users/@me, then opens the gateway. It
// returns once the gateway has answered the IDENTIFY (READY).
func (a *Adapter) Start(ctx context.Context, h core.Host) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting discord adapter: %w", err)
	}
	if h == nil {
		return errors.New("starting discord adapter: nil inbound handler")
	}
	var origin *url.URL
	if a.APIURL != "" {
		var err error
		if origin, err = parseOrigin(a.APIURL); err != nil {
			return fmt.Errorf("starting discord adapter: api_url %w", err)
		}
	}
	a.mu.Lock()
	switch {
	case a.stopped:
		a.mu.Unlock()
		return errors.New("starting discord adapter: already stopped")
	case a.started:
		a.mu.Unlock()
		return errors.New("starting discord adapter: already started")
	}
	a.started = true
	// Handling outlives Start's ctx (often a start-up timeout) but not Stop.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	conns, transport := newConnSet(), newTransport()
	a.runCtx, a.cancel, a.handler, a.conns, a.transport = runCtx, cancel, h, conns, transport
	a.pacer = pace.New(a.SendRate, a.clock)
	a.reconnect = make(chan struct{}, 1)
	a.mu.Unlock()

	s := a.newSession(runCtx, newClient(transport, origin, runCtx), conns)
	if err := a.connect(ctx, runCtx, s, conns); err != nil {
		cancel(err)
		conns.closeAll()
		transport.CloseIdleConnections()
		a.mu.Lock()
		a.started = false
		a.mu.Unlock()
		return err
	}

	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		// Stop ran while the gateway was opening and found nothing to close.
		// (Close emits a Disconnect event, whose handler takes a.mu.)
		cancel(errStopped)
		_ = s.Close()
		conns.closeAll()
		transport.CloseIdleConnections()
		return errors.New("starting discord adapter: stopped while starting")
	}
	a.session = s
	a.supervised = make(chan struct{})
	go a.supervise(runCtx, s, conns, a.reconnect, a.supervised)
	a.mu.Unlock()
	return nil
}

// connect checks the token and opens the gateway.
func (a *Adapter) connect(ctx, runCtx context.Context, s *discordgo.Session, conns *connSet) error {
	me, err := s.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return errors.New("discord adapter: checking the bot token with GET /users/@me: unauthorized (is the token wrong or reset?)")
		}
		return fmt.Errorf("discord adapter: checking the bot token with GET /users/@me: %w", a.scrub(err))
	}
	if me == nil || me.ID == "" {
		return errors.New("discord adapter: checking the bot token with GET /users/@me: no user in the answer")
	}
	a.healthMu.Lock()
	a.botID = me.ID
	a.healthMu.Unlock()

	// Either Start's ctx or Stop aborts the opening.
	openCtx, cancelOpen := context.WithCancelCause(runCtx)
	defer cancelOpen(nil)
	defer context.AfterFunc(ctx, func() { cancelOpen(ctx.Err()) })()
	if err := a.open(openCtx, s, conns); err != nil {
		return fmt.Errorf("discord adapter: connecting to the gateway: %w", err)
	}
	a.log.Info("discord bot connected", "bot", me.Username, "bot_id", me.ID)
	return nil
}

// Stop closes the gateway (discordgo waits a second for Discord to close
// it) and waits, bounded by ctx, for the DMs being handed to the core.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	cancel, s, conns, transport, supervised := a.cancel, a.session, a.conns, a.transport, a.supervised
	a.mu.Unlock()
	if cancel == nil {
		return nil // never started
	}
	cancel(errStopped)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if supervised != nil {
			<-supervised // its reconnect, if any, is aborted by cancel
		}
		if s != nil {
			_ = s.Close()
		}
		a.wg.Wait()
		conns.closeAll()
		transport.CloseIdleConnections()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		conns.closeAll()
		return fmt.Errorf("stopping discord adapter: %w", ctx.Err())
	}
}
