package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/commands"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/internal/diskfault"
	"github.com/parleybot/parley/spool"
	"github.com/parleybot/parley/store"
)

// drainTimeout bounds how long a stopping bot waits for in-flight turns.
const drainTimeout = 30 * time.Second

// loadConfig reads the config named by -c. The default file may be absent
// (built-in defaults); a file named explicitly must exist.
func (e *cliEnv) loadConfig(c *cobra.Command) (*config.Config, error) {
	path := e.flags.config
	var cfg *config.Config
	var err error
	if _, statErr := os.Stat(path); errors.Is(statErr, fs.ErrNotExist) && !c.Flags().Changed("config") {
		cfg = config.DefaultWithEnv(e.lookup)
	} else {
		cfg, err = config.Load(path, e.lookup)
		if err != nil {
			return nil, usageError{err}
		}
	}
	if e.flags.logFormat != "" {
		cfg.Log.Format = e.flags.logFormat
	}
	if e.flags.logLevel != "" {
		cfg.Log.Level = e.flags.logLevel
	}
	logger, err := newLogger(e.io.Err, cfg.Log)
	if err != nil {
		return nil, usageError{err}
	}
	e.logger = logger
	if cfg.File == "" {
		logger.Info("no config file; using built-in defaults", "looked_for", path)
	} else {
		logger.Info("config loaded", "file", cfg.File)
	}
	return cfg, nil
}

// openStore opens and migrates the configured database, the plugins'
// tables with the store's. Its errors name the database and the likely
// cause. disk is a test's injected full disk
// (nil otherwise).
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger, disk *diskfault.Disk) (*store.Store, error) {
	driver, dsn := cfg.Store.Driver, cfg.Store.DSN.Reveal()
	st, err := store.Open(ctx, store.Options{Driver: driver, DSN: dsn, Logger: log, Disk: disk})
	if err != nil {
		return nil, store.Explain(driver, dsn, err) // "sqlite /data/parley.db: ..."
	}
	if err := st.Migrate(ctx, pluginMigrators()...); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("migrating %s store: %w", driver, store.Explain(driver, dsn, err))
	}
	return st, nil
}

// app is one running bot: store, model, plugins, adapters, dispatcher and,
// for `parley run`, the HTTP server.
type app struct {
	cfg      *config.Config
	log      *slog.Logger
	store    *store.Store
	plugins  []core.Plugin
	adapters []core.Adapter
	disp     *engine.Dispatcher
	http     *httpapi.Server
	started  []core.Adapter
	// unlocks release the cross-replica locks the started adapters hold.
	unlocks  []func()
	services []core.Service
	metrics  *metrics
	// spool keeps the DMs of platforms that do not redeliver while the
	// store cannot take them; spoolTemp is its directory when temporary.
	spool     *spool.Spool
	spoolTemp string
}

// appOptions choose what kind of app to build.
type appOptions struct {
	// wantAdapter filters the enabled adapters.
	wantAdapter func(name string, enabled bool) bool
	// serveHTTP starts the HTTP server on http.listen.
	serveHTTP bool
	// configure adjusts an adapter before it starts (the terminal's streams).
	configure func(core.Adapter)
	clock     core.Clock
	// storeDisk and spoolDisk, in tests that cannot mount a small file
	// system, make the store's and the spool's writes fail as on a full
	// disk while full.
	storeDisk, spoolDisk *diskfault.Disk
}

// buildApp wires everything from the config without starting anything.
func buildApp(ctx context.Context, cfg *config.Config, log *slog.Logger, opts appOptions) (_ *app, err error) {
	if opts.clock == nil {
		opts.clock = core.SystemClock{}
	}
	a := &app{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			a.close() // release what was built before the failure
		}
	}()
	a.metrics = newMetrics(log.With("component", "metrics"))
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
		OnFinish:          a.metrics.Finished,
		Logger:            log.With("component", "llm"),
		// The pacer, the 429 pause and the retries wait on the app's
		// clock, so that a test can move it.
		Now: opts.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			t := opts.clock.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C():
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("llm: %w", err)}
	}
	logModel(log, cfg)
	transcriber, err := newTranscriber(cfg, model, log)
	if err != nil {
		return nil, usageError{err}
	}
	env := core.Env{Logger: log, Clock: opts.clock, Location: cfg.Location(), BotName: "Parley"}
	// Every section is decoded before anything is opened, so a bad config
	// fails (exit 2) without touching the database.
	decoded, err := decodePlugins(cfg)
	if err != nil {
		return nil, err
	}
	for _, p := range decoded {
		if n, ok := p.(interface{ BotName() string }); ok {
			env.BotName = n.BotName()
		}
	}
	if a.adapters, err = buildAdapters(ctx, cfg, env, opts.wantAdapter); err != nil {
		return nil, err
	}
	if len(a.adapters) == 0 {
		return nil, usageError{errors.New("no adapter is enabled: enable one under adapters: in the config")}
	}
	for _, ad := range a.adapters {
		if opts.configure != nil {
			opts.configure(ad)
		}
	}
	if a.store, err = openStore(ctx, cfg, log.With("component", "store"), opts.storeDisk); err != nil {
		return nil, err
	}
	// One write now: a read-only file or a full disk is found before any
	// adapter starts, not by the first message. (Commands that only read,
	// through withStore, do not write.)
	if err := a.store.ProbeWrite(ctx); err != nil {
		return nil, err
	}
	// Summaries and facts must not keep a reasoning model's thinking.
	env.Store, env.Database, env.LLM, env.LightModel = a.store, a.store.Database(), core.WithoutReasoning(model), cfg.LLM.LightModel
	env.MaxPendingPerConversation = cfg.Scheduler.MaxPendingPerConversation
	jobWaker := core.NewWaker()
	env.JobsChanged = jobWaker.Wake
	if env.LightModel == "" {
		env.LightModel = cfg.LLM.Model
	}
	if a.plugins, err = provisionPlugins(ctx, decoded, env); err != nil {
		return nil, err
	}
	// MCP tools come after the built-in plugins' own. The client starts and
	// stops with the plugins' services.
	mcpTools, err := newMCP(cfg, log, a.metrics)
	if err != nil {
		return nil, usageError{fmt.Errorf("mcp: %w", err)}
	}
	if mcpTools != nil {
		a.plugins = append(a.plugins, mcpTools)
	}
	a.metrics.watchStore(a.store)
	var cmds core.CommandHandler // nil: every /word is text for the model
	if cfg.Commands.Enabled {
		cmds = commands.New(commands.Config{Store: a.store, Facts: pluginFacts(env.Database), BotName: env.BotName,
			Location: cfg.Location(), Clock: opts.clock, Logger: log.With("component", "commands"), JobsChanged: jobWaker.Wake})
	}
	a.disp, err = engine.New(engine.Config{
		Store:            a.store,
		LLM:              model,
		Plugins:          a.plugins,
		Adapters:         a.adapters,
		Logger:           log.With("component", "dispatcher"),
		Clock:            opts.clock,
		Location:         cfg.Location(),
		AllowUsers:       cfg.Bot.AllowUsers,
		FailureMessage:   cfg.Bot.FailureMessage,
		BusyMessage:      cfg.Bot.BusyMessage,
		MaxToolRounds:    cfg.LLM.MaxToolRounds,
		Debounce:         cfg.Runs.Debounce,
		DuringGeneration: core.BusyPolicy(cfg.Runs.DuringGeneration),
		StaleAfter:       cfg.Runs.StaleAfter,
		TurnTimeout:      cfg.Runs.TurnTimeout,
		Media: core.MediaConfig{
			Vision:           cfg.LLM.Vision,
			MaxBytes:         int64(cfg.Media.MaxBytes),
			MaxImagePx:       cfg.Media.MaxImagePx,
			MaxDocumentChars: cfg.Media.MaxDocumentChars,
			MaxPerTurn:       cfg.Media.MaxPerTurn,
			Transcriber:      transcriber,
		},
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
		JobWaker:          jobWaker,
		Commands:          cmds,
		Limits: core.UserLimits{
			MessagesPerMinute: cfg.Bot.Limits.MessagesPerMinute,
			TurnsPerDay:       cfg.Bot.Limits.TurnsPerDay,
			TokensPerDay:      cfg.Bot.Limits.TokensPerDay,
			Exempt:            cfg.Bot.Limits.Exempt,
		},
	})
	if err != nil {
		return nil, err
	}
	if opts.serveHTTP {
		// `parley run` only: in `parley chat` the one typing sees a store
		// error at once.
		if err := a.openSpool(cfg, log, opts.spoolDisk); err != nil {
			return nil, err
		}
	}
	if opts.serveHTTP {
		a.http = newHTTPServer(cfg, log.With("component", "http"))
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
		a.http.AddHealthDetail("llm", modelHealth(model))
		if mcpTools != nil {
			reportMCP(a.http, mcpTools)
		}
		a.http.Mux().Handle("GET /metrics", a.metrics.handler())
		httpapi.NewAPI(httpapi.APIConfig{
			Token:       cfg.HTTP.APIToken.Reveal(),
			Store:       a.store,
			Adapters:    a.adapters,
			JobsChanged: jobWaker.Wake,
			Now:         opts.clock.Now,
			TimeZone:    cfg.Location().String(),
			MaxPending:  cfg.Scheduler.MaxPendingPerConversation,
			Backoff:     a.http.Backoff(),
		}, log.With("component", "api")).Mount(a.http.Mux())
		con := newConsole(a, cfg, log, opts.clock, jobWaker.Wake)
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
	return a, nil
}

// startAdapter starts ad, first taking the lock its intake needs across
// replicas (Telegram polling), which it then holds until stop.
func (a *app) startAdapter(ctx context.Context, ad core.Adapter) error {
	unlock := func() {}
	if el, ok := ad.(core.ExclusiveInbound); ok {
		if name, exclusive := el.InboundLock(); exclusive {
			u, held, err := a.store.TryLock(ctx, name)
			if err != nil {
				return err
			}
			if !held {
				return fmt.Errorf("another replica already holds %s: only one may consume this intake; "+
					"run the others without it (Telegram: mode: webhook behind any replica)", name)
			}
			unlock = u
		}
	}
	if err := ad.Start(ctx, a.inbound(ad)); err != nil {
		unlock()
		return err
	}
	a.unlocks = append(a.unlocks, unlock)
	return nil
}

// start brings the bot up: services, adapters, dispatcher, HTTP.
func (a *app) start(ctx context.Context) error {
	for _, p := range a.plugins {
		if s, ok := p.(core.Service); ok {
			if err := s.Start(ctx); err != nil {
				return fmt.Errorf("starting plugin %s: %w", p.Name(), err)
			}
			a.services = append(a.services, s)
		}
	}
	if a.spool != nil {
		// Before the adapters: what it kept from the last run goes first.
		a.spool.Start(ctx)
	}
	// One platform failing to start (a revoked token) must not take the
	// others down: it is logged, shown on /healthz, and the rest run.
	var failed []error
	for _, ad := range a.adapters {
		if err := a.startAdapter(ctx, ad); err != nil {
			err = fmt.Errorf("starting adapter %s: %w", ad.Name(), err)
			a.log.Error("adapter did not start; the other adapters keep running", "adapter", ad.Name(), "err", err)
			failed = append(failed, err)
			if a.http != nil {
				a.http.AddHealthCheck("adapter:"+ad.Name(), func(context.Context) error { return err })
			}
			continue
		}
		a.started = append(a.started, ad)
		a.log.Info("adapter started", "adapter", ad.Name())
	}
	if len(a.started) == 0 {
		return fmt.Errorf("no adapter started: %w", errors.Join(failed...))
	}
	// The dispatcher starts once the adapters can send: scheduled messages
	// due at start-up go out at once. DMs that arrived meanwhile are stored
	// and their runs wait for it.
	if err := a.disp.Start(ctx); err != nil {
		return fmt.Errorf("starting dispatcher: %w", err)
	}
	if a.http != nil {
		if err := a.http.Start(); err != nil {
			return err
		}
	}
	return nil
}

// stop drains in-flight turns (bounded), then stops adapters, the HTTP
// server and services, and closes the store. Messages that arrive while
// turns drain are stored and answered on the next start.
func (a *app) stop() error {
	var errs []error
	if a.disp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		if err := a.disp.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ad := range a.started {
		if err := ad.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping adapter %s: %w", ad.Name(), err))
		}
	}
	for _, unlock := range a.unlocks {
		unlock()
	}
	a.unlocks = nil
	// After the adapters: nothing more comes in.
	if err := a.stopSpool(ctx); err != nil {
		errs = append(errs, err)
	}
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range a.services {
		if err := s.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping service: %w", err))
		}
	}
	a.close()
	return errors.Join(errs...)
}

// close releases what build acquired; safe on a partly built app.
func (a *app) close() {
	if a.spool != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := a.stopSpool(ctx); err != nil {
			a.log.Error("closing the inbound spool", "err", err)
		}
		cancel()
	}
	cleanupAll(a.adapters)
	cleanupAll(a.plugins)
	if a.store != nil {
		if err := a.store.Close(); err != nil {
			a.log.Error("closing store", "err", err)
		}
		a.store = nil
	}
}

// newLogger builds the slog logger for log.format and log.level.
func newLogger(w interface{ Write([]byte) (int, error) }, c config.Log) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(strings.ToUpper(c.Level))); err != nil {
		return nil, fmt.Errorf("log level %q: want debug, info, warn or error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("log format %q: want text or json", c.Format)
	}
}
