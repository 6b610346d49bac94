package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/adapters/slack/eventset"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/internal/httpclient"
)

func init() {
	core.RegisterAdapter(core.AdapterInfo{Name: "slack", New: func() core.Adapter { return New() }})
}

// Platform is the platform this adapter serves: the core.Platform of its
// conversations and of the API's channel_type "slack".
const Platform core.Platform = "slack"

// Interface guards.
var (
	_ core.Adapter        = (*Adapter)(nil)
	_ core.HTTPMounter    = (*Adapter)(nil)
	_ core.HealthReporter = (*Adapter)(nil)
	_ core.Provisioner    = (*Adapter)(nil)
	_ core.Validator      = (*Adapter)(nil)
	_ core.PlatformTitler = (*Adapter)(nil)
	_ core.Streamer       = (*Adapter)(nil)
	_ core.StreamModer    = (*Adapter)(nil)
	_ core.MessageEditor  = (*Adapter)(nil)
	_ core.Reactor        = (*Adapter)(nil)
	_ core.Unreactor      = (*Adapter)(nil)
)

// Modes.
const (
	// ModeSocket receives events over a Socket Mode websocket.
	ModeSocket = "socket"
	// ModeEvents receives events as HTTP POSTs (the Events API) on
	// Parley's server at EventsPath.
	ModeEvents = "events"
)

const (
	// maxMessageLength is where replies are split: Slack advises at most
	// 4,000 characters per message and truncates far longer ones.
	maxMessageLength = 4000
	// requestTimeout bounds one Web API call.
	requestTimeout = 30 * time.Second
)

// errStopped is why the adapter's work ends when Stop is called.
var errStopped = errors.New("slack adapter stopped")

// Adapter is the Slack app. Create it with New; its exported fields are
// its config (adapters.slack in YAML).
type Adapter struct {
	// BotToken is the bot user OAuth token, xoxb-… (required).
	BotToken config.Secret `yaml:"bot_token"`
	// AppToken is the app-level token, xapp-…, with connections:write
	// (required in socket mode).
	AppToken config.Secret `yaml:"app_token"`
	// SigningSecret is the app's signing secret, which Slack signs Events
	// API requests with (required in events mode).
	SigningSecret config.Secret `yaml:"signing_secret"`
	// Mode is socket (Socket Mode, the default) or events (Slack POSTs
	// events to /webhooks/slack/events on Parley's HTTP server).
	Mode string `yaml:"mode"`
	// APIURL is the Web API's base URL (default "": https://slack.com/api/).
	APIURL string `yaml:"api_url"`
	// SendRate paces the messages the bot posts, so that Slack's limits
	// are kept rather than found by 429s (default: chat.postMessage's
	// one a second per channel, after a burst of 3; no workspace-wide
	// limit of the adapter's own).
	SendRate pace.Limits `yaml:"send_rate"`
	// Streaming is how replies grow as the model writes them: auto, edits
	// or off (see StreamingAuto…); auto by default.
	Streaming string `yaml:"streaming"`

	// The parts, each with one job; they share *state. Embedding promotes
	// the methods core's interfaces ask for (Send, Mount, Health…).
	*state
	*users   // display names, DMs, OpenConversation
	*inbound // Events API, Socket Mode, slash commands, dedup
	*sender  // Send, SendImage: splitting, pacing, retries
	*fetcher // FetchAttachment
	*growth  // Stream, EditMessage, DeleteMessage: replies that grow
}

// New returns a Slack adapter with its defaults set. It has no side
// effects: nothing connects before Start.
func New() *Adapter {
	a := &Adapter{
		Mode:      ModeSocket,
		Streaming: StreamingAuto,
		// Slack allows chat.postMessage about once a second per channel,
		// with short bursts over it.
		SendRate: pace.Limits{PerChatPerSecond: 1, PerChatBurst: 3},
	}
	st := &state{
		cfg:                 a,
		log:                 slog.New(slog.DiscardHandler),
		clock:               core.SystemClock{},
		sendTimeout:         60 * time.Second,
		maxRateLimitRetries: 5,
		maxServerRetries:    3,
		serverBackoff:       500 * time.Millisecond,
		ackBudget:           2500 * time.Millisecond,
		reconnectMin:        time.Second,
		reconnectMax:        2 * time.Minute,
	}
	u := &users{state: st, names: newNameCache(time.Hour, 10000), dms: newNameCache(24*time.Hour, 10000)}
	a.state, a.users = st, u
	a.inbound = &inbound{state: st, users: u, seen: eventset.NewSet(time.Hour, 10000)}
	a.sender = &sender{state: st, users: u}
	a.fetcher = &fetcher{state: st}
	a.growth = &growth{sender: a.sender}
	return a
}

// Name returns "slack".
func (a *Adapter) Name() string { return "slack" }

// Platform returns Platform.
func (a *Adapter) Platform() core.Platform { return Platform }

// PlatformTitle is how the model hears the platform named: "Slack".
func (a *Adapter) PlatformTitle() string { return "Slack" }

// Capabilities reports 4,000-character mrkdwn messages, rich text,
// buttons, and no typing indicator: Slack offers none to bots outside its assistant
// threads.
func (a *Adapter) Capabilities() core.Capabilities {
	// Redelivers is false: Slack sends an unacknowledged event again only
	// three times, within minutes, then forgets it, so a longer store
	// outage would lose the DM; the app's inbound spool keeps it instead.
	// Choices: Block Kit buttons, their taps taken as block_actions.
	return core.Capabilities{MaxMessageLength: maxMessageLength, Markup: "mrkdwn", Typing: false, RichText: true,
		Choices: true}
}

// Provision takes the logger and clock from the host.
func (a *Adapter) Provision(_ context.Context, env core.Env) error {
	a.parleyBot = env.BotID
	if env.Logger != nil {
		a.log = env.Logger.With("adapter", "slack")
	}
	if env.Clock != nil {
		a.clock = env.Clock
	}
	return nil
}

// Validate checks the decoded config. Its messages never show a secret.
func (a *Adapter) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("slack adapter: "+format, args...))
	}
	checkToken := func(key, prefix, env string, tok string, required bool) {
		switch {
		case strings.TrimSpace(tok) == "":
			if required {
				bad("%s is required (set adapters.slack.%s, e.g. ${%s})", key, key, env)
			}
		case strings.ContainsFunc(tok, unicode.IsSpace):
			bad("%s must not contain spaces", key)
		case !strings.HasPrefix(tok, prefix):
			bad("%s must start with %q", key, prefix)
		}
	}
	switch a.Mode {
	case ModeSocket, ModeEvents:
	default:
		bad("mode must be socket or events, got %q", a.Mode)
	}
	switch a.Streaming {
	case StreamingAuto, StreamingEdits, StreamingOff:
	default:
		bad("adapters.slack.streaming must be auto, edits or off, got %q", a.Streaming)
	}
	checkToken("bot_token", "xoxb-", "SLACK_BOT_TOKEN", a.BotToken.Reveal(), true)
	checkToken("app_token", "xapp-", "SLACK_APP_TOKEN", a.AppToken.Reveal(), a.Mode == ModeSocket)
	if a.Mode == ModeEvents && strings.TrimSpace(a.SigningSecret.Reveal()) == "" {
		bad("signing_secret is required in events mode (Basic Information → App Credentials in the app's settings)")
	}
	if a.APIURL != "" {
		if _, err := apiURL(a.APIURL); err != nil {
			bad("api_url %v", err)
		}
	}
	if err := a.SendRate.Validate("adapters.slack.send_rate"); err != nil {
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

// apiURL reads api_url as the Web API's base URL, with the trailing slash
// slack-go joins method names to.
func apiURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "", fmt.Errorf("must be an http or https URL, got %q", raw)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", fmt.Errorf("must be a base URL like https://slack.com/api/, without query or user, got %q", raw)
	}
	if !strings.HasSuffix(raw, "/") {
		raw += "/"
	}
	return raw, nil
}

// Start checks the bot token with auth.test, which also tells the bot's
// own user id. In socket mode it then opens the websocket and returns once
// Slack has said hello; in events mode events arrive on Mount's route.
func (a *Adapter) Start(ctx context.Context, h core.Host) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting slack adapter: %w", err)
	}
	if h == nil {
		return errors.New("starting slack adapter: nil inbound handler")
	}
	transport := httpclient.Transport(requestTimeout)
	api, err := a.newAPI(transport)
	if err != nil {
		return fmt.Errorf("starting slack adapter: %w", err)
	}
	a.mu.Lock()
	switch {
	case a.stopped:
		a.mu.Unlock()
		return errors.New("starting slack adapter: already stopped")
	case a.started:
		a.mu.Unlock()
		return errors.New("starting slack adapter: already started")
	}
	a.started = true
	// Handling outlives Start's ctx (often a start-up timeout) but not Stop.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	// The client is live from here on: DMs may arrive before Start returns.
	a.runCtx, a.cancel, a.handler, a.transport, a.api = runCtx, cancel, h, transport, api
	a.pacer = pace.New(a.SendRate, a.clock)
	a.mu.Unlock()

	fail := func(err error) error {
		cancel(err)
		transport.CloseIdleConnections()
		a.mu.Lock()
		a.started, a.api = false, nil
		a.mu.Unlock()
		return err
	}
	if err := a.authTest(ctx, api); err != nil {
		return fail(err)
	}
	var done chan struct{}
	if a.Mode == ModeSocket {
		if done, err = a.openSocket(ctx, runCtx, api); err != nil {
			cancel(err)
			<-done
			return fail(err)
		}
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		cancel(errStopped)
		if done != nil {
			<-done
		}
		transport.CloseIdleConnections()
		return errors.New("starting slack adapter: stopped while starting")
	}
	a.socketDone = done
	if a.Mode == ModeEvents {
		a.setConnected(true, "")
	}
	return nil
}

// authTest checks the bot token and learns the bot's own ids.
func (a *Adapter) authTest(ctx context.Context, api *slack.Client) error {
	res, err := api.AuthTestContext(ctx)
	if err != nil {
		if isAuthError(err) {
			return fmt.Errorf("slack adapter: checking the bot token with auth.test: %s (is bot_token wrong or revoked?)", errorCode(err))
		}
		return fmt.Errorf("slack adapter: checking the bot token with auth.test: %w", a.scrub(err))
	}
	if res.UserID == "" {
		return errors.New("slack adapter: checking the bot token with auth.test: no user id in the answer")
	}
	a.healthMu.Lock()
	a.botUserID, a.botID = res.UserID, res.BotID
	a.healthMu.Unlock()
	a.log.Info("slack bot authenticated", "team", res.Team, "bot_user_id", res.UserID, "mode", a.Mode)
	return nil
}

// Stop closes the websocket and waits, bounded by ctx, for the events
// being handed to the core.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	cancel, transport, socketDone := a.cancel, a.transport, a.socketDone
	a.mu.Unlock()
	if cancel == nil {
		return nil // never started
	}
	cancel(errStopped)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if socketDone != nil {
			<-socketDone
		}
		a.wg.Wait()
		transport.CloseIdleConnections()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping slack adapter: %w", ctx.Err())
	}
}
