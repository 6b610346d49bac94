package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

func init() {
	core.RegisterAdapter(core.AdapterInfo{Name: "telegram", New: func() core.Adapter { return New() }})
}

// Platform is the platform this adapter serves: the core.Platform of its
// conversations and of the API's channel_type "telegram".
const Platform core.Platform = "telegram"

// Interface guards.
var (
	_ core.Adapter           = (*Adapter)(nil)
	_ core.TypingIndicator   = (*Adapter)(nil)
	_ core.HTTPMounter       = (*Adapter)(nil)
	_ core.HealthReporter    = (*Adapter)(nil)
	_ core.ExclusiveInbound  = (*Adapter)(nil)
	_ core.Provisioner       = (*Adapter)(nil)
	_ core.Validator         = (*Adapter)(nil)
	_ core.AttachmentFetcher = (*Adapter)(nil)
	_ core.PlatformTitler    = (*Adapter)(nil)
	_ core.Streamer          = (*Adapter)(nil)
	_ core.StreamModer       = (*Adapter)(nil)
	_ core.MessageEditor     = (*Adapter)(nil)
	_ core.Reactor           = (*Adapter)(nil)
	_ core.Unreactor         = (*Adapter)(nil)
)

// Modes and formats.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"

	// FormatMarkdown shows the model's Markdown formatted (MarkdownV2).
	FormatMarkdown = "markdown"
	// FormatPlain shows it as plain text without the markers.
	FormatPlain = "plain"
	// FormatMarkdownV2 is the old name of FormatMarkdown, still accepted.
	FormatMarkdownV2 = "markdownv2"
)

// webhookSecretPattern is what Telegram accepts as a secret_token.
var webhookSecretPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// Adapter is the Telegram bot. Create it with New; its exported fields are
// its config (adapters.telegram in YAML).
type Adapter struct {
	// Token is the bot token from @BotFather (required).
	Token config.Secret `yaml:"token"`
	// APIURL is the Bot API's base URL (default "": https://api.telegram.org).
	APIURL string `yaml:"api_url"`
	// Mode is polling (getUpdates, the default) or webhook (Telegram POSTs
	// updates to /webhooks/telegram on Parley's HTTP server).
	Mode string `yaml:"mode"`
	// WebhookSecret is the secret Telegram sends in
	// X-Telegram-Bot-Api-Secret-Token: 1-256 characters of A-Z a-z 0-9 _ -
	// (required in webhook mode).
	WebhookSecret config.Secret `yaml:"webhook_secret"`
	// WebhookURL is the public https URL Telegram should POST updates to.
	// When set, Start registers it (setWebhook); when empty in webhook mode
	// the owner registers it themselves (default "").
	WebhookURL string `yaml:"webhook_url"`
	// Format is how the model's replies (Markdown) are shown: markdown
	// (the default) renders them in Telegram's formatting (MarkdownV2);
	// plain sends them as plain text without the markers. markdownv2 is
	// accepted as markdown. Text that is not the model's (notices, API
	// messages of type text) is always sent as written.
	Format string `yaml:"format"`
	// PollTimeout is the getUpdates long-poll timeout (default 30s).
	PollTimeout time.Duration `yaml:"poll_timeout"`
	// SendRate is the pace of the messages the bot sends (send_rate), so
	// that a burst of scheduled messages goes out at Telegram's pace
	// rather than into its 429s. The default is Telegram's documented
	// limits: 30 messages a second per bot, and in one chat one a second
	// after a burst of 3. A zero rate is no limit.
	SendRate pace.Limits `yaml:"send_rate"`
	// Streaming is how a reply grows while the model writes it (default
	// auto): auto shows it in a private chat as a live draft
	// (sendMessageDraft, Bot API 9.5), or as a message grown by edits
	// where the Bot API server refuses drafts; edits always grows a
	// message by editing it; off sends whole replies only.
	Streaming string `yaml:"streaming"`

	// The parts, each with one job; they share *state. Embedding promotes
	// the methods core's interfaces ask for (Send, Mount, Health…).
	*state
	*inbound  // normalising updates, the webhook
	*poller   // the getUpdates loop
	*sender   // Send, SendImage, Typing: splitting, pacing, retries
	*fetcher  // FetchAttachment
	*opener   // OpenConversation
	*streamer // Stream, EditMessage, DeleteMessage: replies that grow
}

// New returns a Telegram adapter with its defaults set. It has no side
// effects: nothing connects before Start.
func New() *Adapter {
	a := &Adapter{
		Mode:        ModePolling,
		Format:      FormatMarkdown,
		PollTimeout: 30 * time.Second,
		SendRate:    pace.Limits{PerSecond: 30, PerChatPerSecond: 1, PerChatBurst: 3},
		Streaming:   StreamingAuto,
	}
	st := &state{
		cfg:                 a,
		log:                 slog.New(slog.DiscardHandler),
		clock:               core.SystemClock{},
		maxRateLimitRetries: 5,
		maxServerRetries:    3,
		serverBackoff:       500 * time.Millisecond,
		pollBackoffMin:      100 * time.Millisecond,
		pollBackoffMax:      5 * time.Second,
		unhealthyAfter:      3,
	}
	in := &inbound{state: st}
	a.state, a.inbound = st, in
	a.poller = &poller{state: st, inbound: in}
	a.sender = &sender{state: st}
	in.send = a.sender
	a.streamer = &streamer{state: st, send: a.sender}
	a.fetcher = &fetcher{state: st}
	a.opener = &opener{state: st}
	return a
}

// Name returns "telegram".
func (a *Adapter) Name() string { return "telegram" }

// Platform returns Platform.
func (a *Adapter) Platform() core.Platform { return Platform }

// PlatformTitle is how the model hears the platform named: "Telegram".
func (a *Adapter) PlatformTitle() string { return "Telegram" }

// Capabilities reports 4096-character messages, a typing indicator and,
// unless format is plain, rich text in MarkdownV2. With format plain the
// core hands Send the model's Markdown already turned into plain text.
// Choices show as an inline keyboard (buttons.go).
func (a *Adapter) Capabilities() core.Capabilities {
	// Redelivers: an update the core did not take is polled (or, with a
	// webhook, posted) again.
	c := core.Capabilities{MaxMessageLength: maxMessageLength, Markup: "plain", Typing: true, Redelivers: true, Choices: true}
	if a.formatted() {
		c.Markup, c.RichText = "markdownv2", true
	}
	return c
}

// Provision takes the logger and clock from the host.
func (a *Adapter) Provision(_ context.Context, env core.Env) error {
	a.webhookPath = core.WebhookPath(env.BotID, WebhookPath)
	if env.Logger != nil {
		a.log = env.Logger.With("adapter", "telegram")
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
		errs = append(errs, fmt.Errorf("telegram adapter: "+format, args...))
	}
	tok := a.Token.Reveal()
	switch {
	case strings.TrimSpace(tok) == "":
		bad("token is required (set adapters.telegram.token, e.g. ${TELEGRAM_BOT_TOKEN})")
	case strings.ContainsFunc(tok, func(r rune) bool { return unicode.IsSpace(r) || r == '/' || r == '?' || r == '#' }):
		bad("token must not contain spaces, '/', '?' or '#'")
	}
	if a.APIURL != "" {
		u, err := url.Parse(a.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("api_url must be an http or https URL, got %q", a.APIURL)
		}
	}
	switch a.Mode {
	case ModePolling, ModeWebhook:
	default:
		bad("mode must be polling or webhook, got %q", a.Mode)
	}
	secret := a.WebhookSecret.Reveal()
	switch {
	case a.Mode == ModeWebhook && secret == "":
		bad("webhook_secret is required in webhook mode")
	case secret != "" && !webhookSecretPattern.MatchString(secret):
		bad("webhook_secret must be 1-256 characters of A-Z, a-z, 0-9, _ and -")
	}
	if a.WebhookURL != "" {
		u, err := url.Parse(a.WebhookURL)
		switch {
		case err != nil || u.Scheme != "https" || u.Host == "":
			bad("webhook_url must be an https URL (Telegram only posts to https), got %q", a.WebhookURL)
		case a.Mode != ModeWebhook:
			bad("webhook_url is set but mode is %q; set mode: webhook or remove webhook_url", a.Mode)
		}
	}
	switch a.Format {
	case FormatMarkdown, FormatPlain, FormatMarkdownV2:
	default:
		bad("format must be markdown or plain (markdownv2 is read as markdown), got %q", a.Format)
	}
	switch a.Streaming {
	case StreamingAuto, StreamingEdits, StreamingOff:
	default:
		bad("adapters.telegram.streaming must be auto, edits or off, got %q", a.Streaming)
	}
	if a.PollTimeout < time.Second || a.PollTimeout > 10*time.Minute {
		bad("poll_timeout must be between 1s and 10m, got %s", a.PollTimeout)
	}
	if err := a.SendRate.Validate("send_rate"); err != nil {
		for _, e := range unjoin(err) {
			bad("%w", e)
		}
	}
	return errors.Join(errs...)
}

// InboundLock names the lock a polling bot needs: Telegram gives updates
// to one getUpdates consumer, so only one replica may poll. It is keyed by
// the bot's id, the token's public part before the colon.
func (a *Adapter) InboundLock() (string, bool) {
	botID, _, ok := strings.Cut(a.Token.Reveal(), ":")
	if !ok || strings.Trim(botID, "0123456789") != "" {
		botID = "?" // not a token's shape: name no part of it
	}
	return "telegram-polling:" + botID, a.Mode != ModeWebhook
}

// Start checks the token with getMe; in polling mode it removes any
// webhook, in webhook mode it registers webhook_url when one is set. It
// then puts the chat commands h lists (Host.Commands) in the private
// chats' command menu and, in polling mode, starts the getUpdates loop.
// It returns once the adapter is ready.
func (a *Adapter) Start(ctx context.Context, h core.Host) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting telegram adapter: %w", err)
	}
	if h == nil {
		return errors.New("starting telegram adapter: nil inbound handler")
	}
	a.mu.Lock()
	switch {
	case a.stopped:
		a.mu.Unlock()
		return errors.New("starting telegram adapter: already stopped")
	case a.started:
		a.mu.Unlock()
		return errors.New("starting telegram adapter: already started")
	}
	a.started = true
	a.mu.Unlock()

	b, client, transport, botID, err := a.connect(ctx)
	if err != nil {
		a.mu.Lock()
		a.started = false
		a.mu.Unlock()
		return err
	}
	a.registerCommands(ctx, b, h)

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		transport.CloseIdleConnections()
		return errors.New("starting telegram adapter: stopped while starting")
	}
	// Handling outlives Start's ctx (often a start-up timeout) but not Stop.
	a.runCtx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	a.bot, a.client, a.transport, a.botID, a.handler = b, client, transport, botID, h
	a.pacer = pace.New(a.SendRate, a.clock)
	if a.Mode == ModePolling {
		a.wg.Add(1)
		go a.poll(a.runCtx)
	}
	return nil
}

// connect builds the client and the bot, checks the token and prepares the
// update delivery for the configured mode.
func (a *Adapter) connect(ctx context.Context) (*bot.Bot, *http.Client, *http.Transport, int64, error) {
	transport := newTransport(a.PollTimeout)
	client := newClient(transport, a.PollTimeout)
	fail := func(format string, err error) (*bot.Bot, *http.Client, *http.Transport, int64, error) {
		transport.CloseIdleConnections()
		return nil, nil, nil, 0, fmt.Errorf("telegram adapter: "+format, a.scrub(err))
	}
	opts := []bot.Option{
		bot.WithServerURL(a.apiURL()),
		bot.WithHTTPClient(a.PollTimeout, client),
		// getMe is called below with Start's ctx so its error can be explained.
		bot.WithSkipGetMe(),
		// Updates come from the adapter's own loop or webhook handler, never
		// from the library's; this only guards against its default, which
		// prints updates with the standard logger.
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
		bot.WithErrorsHandler(func(err error) {
			a.log.Error("telegram client error", "err", a.scrub(err))
		}),
	}
	b, err := bot.New(a.Token.Reveal(), opts...)
	if err != nil {
		return fail("creating the bot client: %w", err)
	}
	me, err := b.GetMe(ctx)
	switch {
	case errors.Is(err, bot.ErrorUnauthorized):
		return fail("checking the bot token with getMe: %w", errors.New("unauthorized (is the token revoked?)"))
	case errors.Is(err, bot.ErrorNotFound):
		return fail("checking the bot token with getMe: %w", errors.New("not found (is the token or api_url wrong?)"))
	case err != nil:
		return fail("checking the bot token with getMe: %w", err)
	case me == nil || me.ID == 0:
		return fail("checking the bot token with getMe: %w", errors.New("no bot in the answer"))
	}
	switch {
	case a.Mode == ModePolling:
		// A leftover webhook makes every getUpdates fail with 409.
		if _, err := b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{}); err != nil {
			return fail("removing the webhook so that polling works: %w", err)
		}
	case a.WebhookURL != "":
		_, err := b.SetWebhook(ctx, &bot.SetWebhookParams{
			URL:            a.WebhookURL,
			SecretToken:    a.WebhookSecret.Reveal(),
			AllowedUpdates: allowedUpdates,
		})
		if err != nil {
			return fail("setting the webhook: %w", err)
		}
	}
	a.log.Info("telegram bot connected", "bot", me.Username, "bot_id", me.ID, "mode", a.Mode, "streaming", a.Streaming)
	return b, client, transport, me.ID, nil
}

// allowedUpdates are the update kinds the bot asks Telegram for (new
// messages, and the taps on its buttons); everything else would be
// ignored anyway.
var allowedUpdates = []string{models.AllowedUpdateMessage, models.AllowedUpdateEditedMessage, models.AllowedUpdateCallbackQuery,
	models.AllowedUpdateMessageReaction}

// Stop stops polling, refuses further webhook updates (503) and waits,
// bounded by ctx, for the updates being handled. The webhook, if any, stays
// registered so Telegram keeps updates until the bot is back.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	cancel, transport := a.cancel, a.transport
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("stopping telegram adapter: %w", ctx.Err())
	}
	if transport != nil {
		transport.CloseIdleConnections()
	}
	return nil
}

// unjoin returns the errors err joins (errors.Join), or err alone, so that
// each gets its own line.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
