package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleybot/parley/app/botmux"
	"github.com/parleybot/parley/app/modelside"
	"github.com/parleybot/parley/app/modules"

	"github.com/parleybot/parley/commands"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/engine/promises"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/internal/metrics"
	"github.com/parleybot/parley/store"
)

// builder builds one bot of the app through buildApp's phases.
type builder struct {
	a    *app
	bt   *bot
	opts appOptions
	// metrics is the bot's view: what it counts carries its id.
	metrics *metrics.Bot
}

// newBuilder starts building bot id from cfg, its effective config.
func newBuilder(a *app, id string, cfg *config.Config, opts appOptions) *builder {
	log := a.log
	if id != defaultBotID {
		log = log.With("bot", id)
	}
	return &builder{a: a, opts: opts, bt: &bot{id: id, cfg: cfg, log: log, jobWaker: core.NewWaker()}, metrics: a.metrics.ForBot(id)}
}

// buildModel builds the model's client and the voice transcriber.
func (b *builder) buildModel() error {
	cfg, log := b.bt.cfg, b.bt.log
	// Bots on one provider account keep its limits together, taking
	// turns for its request slots.
	account := cfg.LLM.BaseURL + "\n" + cfg.LLM.APIKey.Reveal()
	model, err := llm.New(llm.Config{
		ShareLimits:       b.a.accounts[account],
		BaseURL:           cfg.LLM.BaseURL,
		APIKey:            cfg.LLM.APIKey.Reveal(),
		Model:             cfg.LLM.Model,
		Timeout:           cfg.LLM.Timeout,
		MaxToolRounds:     cfg.LLM.MaxToolRounds,
		MaxRetries:        cfg.LLM.MaxRetries,
		MaxTokens:         cfg.LLM.MaxTokens,
		MaxConcurrency:    cfg.LLM.MaxConcurrency,
		RequestsPerMinute: cfg.LLM.RequestsPerMinute,
		TokensPerMinute:   cfg.LLM.TokensPerMinute,
		AuthHint:          modelside.AuthHint(cfg),
		OnFinish:          b.metrics.Finished,
		Logger:            log.With("component", "llm"),
		// The pacer, the 429 pause and the retries wait on the app's
		// clock, so that a test can move it.
		Now:   b.opts.clock.Now,
		Sleep: clockSleep(b.opts.clock),
	})
	if err != nil {
		return usageError{Err: fmt.Errorf("llm: %w", err)}
	}
	b.bt.model = model
	if b.a.accounts[account] == nil {
		b.a.accounts[account] = model
	}
	modelside.LogModel(log, cfg)
	if b.bt.transcriber, err = modelside.NewTranscriber(cfg, model, log); err != nil {
		return usageError{Err: err}
	}
	if b.bt.speaker, err = modelside.NewSpeaker(cfg, model, log); err != nil {
		return usageError{Err: err}
	}
	return nil
}

// clockSleep waits d on clock, or until ctx ends.
func clockSleep(clock core.Clock) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		t := clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// decode builds the model, decodes the plugins and builds the adapters,
// reporting the plugins' and the adapters' config errors together: an
// owner fixes them all in one go, not one a start.
func (b *builder) decode(ctx context.Context) error {
	if err := b.buildModel(); err != nil {
		return err
	}
	errP := b.decodePlugins()
	errA := b.buildAdapters(ctx)
	switch {
	case errP == nil:
		return errA
	case errA == nil:
		modules.CleanupAll(b.bt.adapters) // built, and not to be used
		b.bt.adapters = nil
		return errP
	}
	return modules.UsageErrors([]error{errP, errA})
}

// decodePlugins decodes the plugins' sections and starts the env the
// modules are provisioned with; a plugin may name the bot.
func (b *builder) decodePlugins() error {
	cfg := b.bt.cfg
	b.bt.env = core.Env{BotID: b.bt.id, Logger: b.bt.log, Clock: b.opts.clock, Location: cfg.Location(), BotName: "Parley"}
	decoded, err := modules.DecodePlugins(cfg)
	if err != nil {
		return err
	}
	for _, p := range decoded {
		if n, ok := p.(interface{ BotName() string }); ok {
			b.bt.env.BotName = n.BotName()
		}
	}
	b.bt.decoded = decoded
	return nil
}

// buildAdapters builds the wanted adapters; an app needs one at least.
func (b *builder) buildAdapters(ctx context.Context) error {
	bt := b.bt
	var err error
	if bt.adapters, err = modules.BuildAdapters(ctx, bt.cfg, bt.env, b.opts.wantAdapter); err != nil {
		return err
	}
	if len(bt.adapters) == 0 {
		return usageError{Err: errors.New("no adapter is enabled: enable one under adapters: in the config")}
	}
	for _, ad := range bt.adapters {
		if b.opts.configure != nil {
			b.opts.configure(ad)
		}
	}
	return nil
}

// provisionPlugins provisions the decoded plugins on the store and the
// model, then adds the MCP servers' tools.
func (b *builder) provisionPlugins(ctx context.Context) error {
	a, bt, cfg := b.a, b.bt, b.bt.cfg
	env := &bt.env
	// Summaries and facts must not keep a reasoning model's thinking.
	bt.store = a.store.ForBot(bt.id)
	env.Store, env.Database, env.LLM, env.LightModel = bt.store, bt.store.Database(), core.WithoutReasoning(bt.model), cfg.LLM.LightModel
	env.MaxPendingPerConversation = cfg.Scheduler.MaxPendingPerConversation
	env.JobsChanged = bt.jobWaker.Wake
	env.NewImageMaker = func(model string) (core.ImageMaker, error) {
		return modelside.NewImageMaker(cfg, bt.model, model, bt.log)
	}
	env.NewEmbedder = func(model string, dims int, base, key string) (*llm.Embedder, error) {
		return modelside.NewEmbedder(cfg, bt.model, model, dims, base, key, bt.log)
	}
	if env.LightModel == "" {
		env.LightModel = cfg.LLM.Model
	}
	var err error
	if bt.plugins, err = modules.ProvisionPlugins(ctx, cfg, bt.decoded, *env); err != nil {
		return err
	}
	// MCP tools come after the built-in plugins' own. The client starts and
	// stops with the plugins' services.
	if bt.mcpTools, err = newMCP(cfg, bt.log, b.metrics.MCPCalled); err != nil {
		return usageError{Err: fmt.Errorf("mcp: %w", err)}
	}
	if bt.mcpTools != nil {
		bt.plugins = append(bt.plugins, bt.mcpTools)
	}
	return nil
}

// buildDispatcher builds the dispatcher on everything built so far.
func (b *builder) buildDispatcher() error {
	bt, cfg := b.bt, b.bt.cfg
	gate := access.NewGate(cfg.Bot.DMPolicy, cfg.Bot.Owners, cfg.Bot.AllowUsers)
	var cmds core.CommandHandler // nil: every /word is text for the model
	if cfg.Commands.Enabled {
		cmds = commands.New(commands.Config{Store: bt.store, Facts: pluginFacts(bt.env.Database), BotName: bt.env.BotName, Location: cfg.Location(),
			Clock: b.opts.clock, Logger: bt.log.With("component", "commands"), JobsChanged: bt.jobWaker.Wake,
			Gate: gate, Pairings: bt.store, Approved: func(ctx context.Context, p access.Request) { bt.disp.Welcome(ctx, p) },
			Export: func(ctx context.Context, conv core.Conversation) ([]core.OutboundFile, error) {
				return exportFiles(ctx, bt.store, bt.env.Database, conv.ID, b.opts.clock.Now())
			},
			Erase: func(ctx context.Context, conv core.Conversation) (int64, error) {
				n, err := bt.store.EraseConversation(ctx, conv.ID, b.opts.clock.Now())
				if err != nil {
					return n, err
				}
				return n, erasure{b.a}.kept(ctx, conv)
			}})
	}
	var err error
	bt.disp, err = engine.New(engine.Config{
		Store:            bt.store,
		LLM:              bt.model,
		Plugins:          bt.plugins,
		Adapters:         bt.adapters,
		Logger:           bt.log.With("component", "dispatcher"),
		Clock:            b.opts.clock,
		Location:         cfg.Location(),
		Gate:             gate,
		FailureMessage:   cfg.Bot.FailureMessage,
		BusyMessage:      cfg.Bot.BusyMessage,
		AckReaction:      cfg.Bot.AckReaction,
		MaxToolRounds:    cfg.LLM.MaxToolRounds,
		Debounce:         cfg.Runs.Debounce,
		DuringGeneration: core.BusyPolicy(cfg.Runs.DuringGeneration),
		Streaming:        outbox.Streaming{Enabled: cfg.Bot.Streaming.Enabled, Interval: cfg.Bot.Streaming.Interval},
		StaleAfter:       cfg.Runs.StaleAfter,
		TurnTimeout:      cfg.Runs.TurnTimeout,
		Media: core.MediaConfig{
			Vision:           cfg.LLM.Vision,
			MaxBytes:         int64(cfg.Media.MaxBytes),
			MaxImagePx:       cfg.Media.MaxImagePx,
			MaxDocumentChars: cfg.Media.MaxDocumentChars,
			MaxPerTurn:       cfg.Media.MaxPerTurn,
			Transcriber:      bt.transcriber,
		},
		Voice:           core.VoiceReplies{Mode: cfg.Voice.Replies, MaxChars: cfg.Voice.MaxCharacters, Speaker: bt.speaker},
		JobMaxAttempts:  cfg.Scheduler.MaxAttempts,
		LateGrace:       cfg.Scheduler.LateGrace,
		JobLease:        cfg.Scheduler.JobLease,
		MaxSendsInDoubt: cfg.Scheduler.MaxSendsInDoubt,
		// On PostgreSQL, replicas wake each other (LISTEN/NOTIFY): the
		// app listens once for all its bots (listenForWork).
		Owner: b.a.owner,
		// Every process sends the scheduled messages of the platforms it
		// serves; `parley chat` too, for the terminal's.
		ScheduledMessages: true,
		RecurringTurns:    true,
		Metrics:           b.metrics,
		JobWaker:          bt.jobWaker,
		Commands:          cmds,
		Promises:          b.promiseChecker(),
		Limits: core.UserLimits{
			MessagesPerMinute: cfg.Bot.Limits.MessagesPerMinute,
			TurnsPerDay:       cfg.Bot.Limits.TurnsPerDay,
			TokensPerDay:      cfg.Bot.Limits.TokensPerDay,
			Exempt:            cfg.Bot.Limits.Exempt,
		},
	})
	return err
}

// buildHTTP builds the server of `parley run`: health, metrics, the API,
// the console and, through botmux, each bot's adapters' routes.
func (a *app) buildHTTP(opts appOptions) {
	a.http = newHTTPServer(a.cfg, a.log.With("component", "http"))
	// A ping, and a write at most every 10 s: a full disk or a
	// read-only file answers pings. Any write of the bot's that the
	// database could not take fails it at once.
	a.http.AddHealthCheck("store", store.NewHealthCheck(a.store, 0).Check)
	a.http.Mux().Handle("GET /metrics", a.metrics.Handler())
	a.mountAPI(opts)
	con := newConsole(a, a.cfg, a.log, opts.clock, a.jobsChanged)
	con.Mount(a.http.Mux())
	a.http.OnShutdown(con.Close) // its live streams would hold the shutdown
	a.routes = botmux.New()
	a.http.Mux().Handle("/", a.routes)
	for _, b := range a.bots {
		a.attachHTTP(b)
	}
}

// jobsChanged wakes every bot's job loop (a job was created or changed
// through the API or the console).
func (a *app) jobsChanged() {
	for _, b := range a.liveBots() {
		b.jobWaker.Wake()
	}
}

// apiBots are the bots the API routes for, as they are now.
func (a *app) apiBots() []httpapi.Bot {
	var out []httpapi.Bot
	for _, b := range a.liveBots() {
		out = append(out, httpapi.Bot{ID: b.id, Store: b.store, Adapters: b.adapters})
	}
	return out
}

// mountAPI mounts the HTTP API (/api/).
func (a *app) mountAPI(opts appOptions) {
	cfg := a.cfg
	httpapi.NewAPI(httpapi.APIConfig{
		Reload:      a.reloadFile,
		Token:       cfg.HTTP.APIToken.Reveal(),
		Store:       a.store.AllBots(),
		Bots:        a.apiBots,
		JobsChanged: a.jobsChanged,
		Now:         opts.clock.Now,
		TimeZone:    cfg.Location().String(),
		MaxPending:  cfg.Scheduler.MaxPendingPerConversation,
		Backoff:     a.http.Backoff(),
		Export: func(ctx context.Context, id int64) ([]core.OutboundFile, error) {
			return exportFiles(ctx, a.store.AllBots(), a.store.Database(), id, opts.clock.Now())
		},
		Erase: func(ctx context.Context, id int64) (int64, error) {
			return erasure{a}.conversation(ctx, id, opts.clock.Now())
		},
	}, a.log.With("component", "api")).Mount(a.http.Mux())
}

// promiseChecker is the bot's bot.promise_check, nil when it is off: the
// light model judges the replies the patterns are unsure of.
func (b *builder) promiseChecker() *promises.Checker {
	bt := b.bt
	if !bt.cfg.Bot.PromiseCheck {
		return nil
	}
	return promises.New(promises.Config{Light: bt.env.LLM, LightModel: bt.env.LightModel, Metrics: b.metrics,
		Logger: bt.log.With("component", "promises")})
}
