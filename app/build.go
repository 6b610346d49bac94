package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleybot/parley/commands"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/mcp"
	"github.com/parleybot/parley/store"
)

// builder carries what buildApp's phases hand one another: the app being
// built, and what a phase makes that a later one needs.
type builder struct {
	a           *app
	opts        appOptions
	model       *llm.Client
	transcriber core.Transcriber
	speaker     core.Speaker // nil: replies go as text
	// env is what adapters and plugins are provisioned with; the store
	// and the model join it once the store is open.
	env      core.Env
	decoded  []core.Plugin // the enabled plugins, not yet provisioned
	jobWaker *core.Waker
	mcpTools *mcp.Manager // nil without MCP servers
}

// buildModel builds the model's client and the voice transcriber.
func (b *builder) buildModel() error {
	cfg, log := b.a.cfg, b.a.log
	model, err := llm.New(llm.Config{
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
		AuthHint:          authHint(cfg),
		OnFinish:          b.a.metrics.Finished,
		Logger:            log.With("component", "llm"),
		// The pacer, the 429 pause and the retries wait on the app's
		// clock, so that a test can move it.
		Now:   b.opts.clock.Now,
		Sleep: clockSleep(b.opts.clock),
	})
	if err != nil {
		return usageError{fmt.Errorf("llm: %w", err)}
	}
	b.model = model
	logModel(log, cfg)
	if b.transcriber, err = newTranscriber(cfg, model, log); err != nil {
		return usageError{err}
	}
	if b.speaker, err = newSpeaker(cfg, model, log); err != nil {
		return usageError{err}
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

// decodePlugins decodes the plugins' sections and starts the env the
// modules are provisioned with; a plugin may name the bot.
func (b *builder) decodePlugins() error {
	cfg := b.a.cfg
	b.env = core.Env{Logger: b.a.log, Clock: b.opts.clock, Location: cfg.Location(), BotName: "Parley"}
	decoded, err := decodePlugins(cfg)
	if err != nil {
		return err
	}
	for _, p := range decoded {
		if n, ok := p.(interface{ BotName() string }); ok {
			b.env.BotName = n.BotName()
		}
	}
	b.decoded = decoded
	return nil
}

// buildAdapters builds the wanted adapters; an app needs one at least.
func (b *builder) buildAdapters(ctx context.Context) error {
	a := b.a
	var err error
	if a.adapters, err = buildAdapters(ctx, a.cfg, b.env, b.opts.wantAdapter); err != nil {
		return err
	}
	if len(a.adapters) == 0 {
		return usageError{errors.New("no adapter is enabled: enable one under adapters: in the config")}
	}
	for _, ad := range a.adapters {
		if b.opts.configure != nil {
			b.opts.configure(ad)
		}
	}
	return nil
}

// openStore opens the database and checks that it takes writes.
func (b *builder) openStore(ctx context.Context) error {
	a := b.a
	var err error
	if a.store, err = openStore(ctx, a.cfg, a.log.With("component", "store"), b.opts.storeDisk); err != nil {
		return err
	}
	// One write now: a read-only file or a full disk is found before any
	// adapter starts, not by the first message. (Commands that only read,
	// through withStore, do not write.)
	return a.store.ProbeWrite(ctx)
}

// provisionPlugins provisions the decoded plugins on the store and the
// model, then adds the MCP servers' tools.
func (b *builder) provisionPlugins(ctx context.Context) error {
	a, cfg := b.a, b.a.cfg
	// Summaries and facts must not keep a reasoning model's thinking.
	b.env.Store, b.env.Database, b.env.LLM, b.env.LightModel = a.store, a.store.Database(), core.WithoutReasoning(b.model), cfg.LLM.LightModel
	b.env.MaxPendingPerConversation = cfg.Scheduler.MaxPendingPerConversation
	b.env.JobsChanged = b.jobWaker.Wake
	b.env.NewImageMaker = func(model string) (core.ImageMaker, error) { return newImageMaker(cfg, b.model, model, a.log) }
	if b.env.LightModel == "" {
		b.env.LightModel = cfg.LLM.Model
	}
	var err error
	if a.plugins, err = provisionPlugins(ctx, b.decoded, b.env); err != nil {
		return err
	}
	// MCP tools come after the built-in plugins' own. The client starts and
	// stops with the plugins' services.
	if b.mcpTools, err = newMCP(cfg, a.log, a.metrics); err != nil {
		return usageError{fmt.Errorf("mcp: %w", err)}
	}
	if b.mcpTools != nil {
		a.plugins = append(a.plugins, b.mcpTools)
	}
	a.metrics.watchStore(a.store)
	return nil
}

// buildDispatcher builds the dispatcher on everything built so far.
func (b *builder) buildDispatcher() error {
	a, cfg := b.a, b.a.cfg
	var cmds core.CommandHandler // nil: every /word is text for the model
	if cfg.Commands.Enabled {
		cmds = commands.New(commands.Config{Store: a.store, Facts: pluginFacts(b.env.Database), BotName: b.env.BotName, Location: cfg.Location(),
			Clock: b.opts.clock, Logger: a.log.With("component", "commands"), JobsChanged: b.jobWaker.Wake})
	}
	var err error
	a.disp, err = engine.New(engine.Config{
		Store:            a.store,
		LLM:              b.model,
		Plugins:          a.plugins,
		Adapters:         a.adapters,
		Logger:           a.log.With("component", "dispatcher"),
		Clock:            b.opts.clock,
		Location:         cfg.Location(),
		AllowUsers:       cfg.Bot.AllowUsers,
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
			Transcriber:      b.transcriber,
		},
		Voice:           core.VoiceReplies{Mode: cfg.Voice.Replies, MaxChars: cfg.Voice.MaxCharacters, Speaker: b.speaker},
		JobMaxAttempts:  cfg.Scheduler.MaxAttempts,
		LateGrace:       cfg.Scheduler.LateGrace,
		JobLease:        cfg.Scheduler.JobLease,
		MaxSendsInDoubt: cfg.Scheduler.MaxSendsInDoubt,
		// On PostgreSQL, replicas wake each other (LISTEN/NOTIFY).
		Listener: a.store,
		// Every process sends the scheduled messages of the platforms it
		// serves; `parley chat` too, for the terminal's.
		ScheduledMessages: true,
		RecurringTurns:    true,
		Metrics:           a.metrics,
		JobWaker:          b.jobWaker,
		Commands:          cmds,
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
// the console and the adapters' webhooks.
func (b *builder) buildHTTP() {
	a := b.a
	a.http = newHTTPServer(a.cfg, a.log.With("component", "http"))
	b.addHealthChecks()
	a.http.Mux().Handle("GET /metrics", a.metrics.handler())
	b.mountAPI()
	con := newConsole(a, a.cfg, a.log, b.opts.clock, b.jobWaker.Wake)
	con.Mount(a.http.Mux())
	a.http.OnShutdown(con.Close) // its live streams would hold the shutdown
	for _, ad := range a.adapters {
		if m, ok := ad.(core.HTTPMounter); ok {
			m.Mount(a.http.Mux())
		}
		if h, ok := ad.(core.HealthReporter); ok {
			a.http.AddHealthCheck("adapter:"+ad.Name(), func(context.Context) error { return h.Health() })
		}
	}
}

// addHealthChecks puts the store, the spool, the model and the MCP
// servers on /healthz.
func (b *builder) addHealthChecks() {
	a := b.a
	// A ping, and a write at most every 10 s: a full disk or a
	// read-only file answers pings. Any write of the bot's that the
	// database could not take fails it at once.
	a.http.AddHealthCheck("store", store.NewHealthCheck(a.store, 0).Check)
	if sp := a.spool; sp != nil {
		// Unable to write its file, it refuses messages: take the
		// replica out.
		a.http.AddHealthCheck("inbound_spool", func(context.Context) error { return sp.Health() })
	}
	// Reported, never failing the check: a load balancer must not take
	// a replica out because the model provider is down.
	a.http.AddHealthDetail("llm", modelHealth(b.model))
	if b.mcpTools != nil {
		reportMCP(a.http, b.mcpTools)
	}
}

// mountAPI mounts the HTTP API (/api/).
func (b *builder) mountAPI() {
	a, cfg := b.a, b.a.cfg
	httpapi.NewAPI(httpapi.APIConfig{
		Token:       cfg.HTTP.APIToken.Reveal(),
		Store:       a.store,
		Adapters:    a.adapters,
		JobsChanged: b.jobWaker.Wake,
		Now:         b.opts.clock.Now,
		TimeZone:    cfg.Location().String(),
		MaxPending:  cfg.Scheduler.MaxPendingPerConversation,
		Backoff:     a.http.Backoff(),
	}, a.log.With("component", "api")).Mount(a.http.Mux())
}
