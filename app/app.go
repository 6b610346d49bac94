package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/app/botmux"
	"github.com/parleybot/parley/app/modules"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/internal/diskfault"
	"github.com/parleybot/parley/internal/loop"
	"github.com/parleybot/parley/internal/metrics"
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
			return nil, usageError{Err: err}
		}
	}
	if e.flags.logFormat != "" {
		cfg.Log.Format = e.flags.logFormat
	}
	if e.flags.logLevel != "" {
		cfg.Log.Level = e.flags.logLevel
	}
	logOut := e.logTo
	if logOut == nil {
		logOut = e.io.Err
	}
	logger, err := newLogger(logOut, cfg.Log)
	if err != nil {
		return nil, usageError{Err: err}
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
	kept := int64(cfg.Store.MaxFileBytes)
	if kept == 0 {
		kept = -1 // store.max_file_bytes: 0 keeps none
	}
	st, err := store.Open(ctx, store.Options{Driver: driver, DSN: dsn, Logger: log, Disk: disk, KeptFileBytes: kept})
	if err != nil {
		return nil, store.Explain(driver, dsn, err) // "sqlite /data/parley.db: ..."
	}
	if err := st.Migrate(ctx, pluginMigrators()...); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("migrating %s store: %w", driver, store.Explain(driver, dsn, err))
	}
	return st, nil
}

// app is the running process: its bots, and what they share: the store,
// the metrics, the inbound spool and, for `parley run`, the HTTP server.
type app struct {
	cfg   *config.Config
	log   *slog.Logger
	store *store.Store
	// bots are the process's bots, in config order (one, "default", for
	// a config without bots:).
	bots    []*bot
	http    *httpapi.Server
	metrics *metrics.Registry
	// routes serve the bots' adapters' routes on http.
	routes *botmux.Mux
	// opts are what the app was built with, for the bots a reload builds.
	opts appOptions
	// owner names this process in the runs and jobs its bots claim: one
	// for all of them (engine.NewOwnerID).
	owner string
	// runCtx is the context start ran with: a bot a reload starts runs
	// on it, not on the reload's request.
	runCtx context.Context
	// reloading is held by a reload and by stop: one at a time.
	reloading sync.Mutex
	// botsMu guards bots for those who read them while a reload may
	// change them (HTTP handlers).
	botsMu sync.RWMutex
	// accounts are the model clients whose limits the bots on each
	// provider account (base URL and key) share; built and reloaded
	// bots add to it under reloading.
	accounts map[string]*llm.Client
	// stopListening ends listenForWork; nil before start.
	stopListening func()
	// retention deletes messages past retention.messages; nil when off.
	retention *loop.Loop
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
	// onlyBot, when set, builds that bot alone (`parley chat --bot`).
	onlyBot string
	// lookup reads the environment for ${VAR} when a reload reads the
	// config again.
	lookup func(string) (string, bool)
	// storeDisk and spoolDisk, in tests that cannot mount a small file
	// system, make the store's and the spool's writes fail as on a full
	// disk while full.
	storeDisk, spoolDisk *diskfault.Disk
}

// buildApp wires everything from the config without starting anything,
// one phase at a time: each bot's model, plugins' sections and adapters,
// then the store, each bot's plugins and dispatcher and, for `parley
// run`, the spool and the HTTP server.
func buildApp(ctx context.Context, cfg *config.Config, log *slog.Logger, opts appOptions) (_ *app, err error) {
	if opts.clock == nil {
		opts.clock = core.SystemClock{}
	}
	a := &app{cfg: cfg, log: log, opts: opts, owner: engine.NewOwnerID(), accounts: map[string]*llm.Client{}}
	defer func() {
		if err != nil {
			a.close() // release what was built before the failure
		}
	}()
	a.metrics = metrics.New(log.With("component", "metrics"))
	var builders []*builder
	for _, bc := range cfg.BotConfigs() {
		if opts.onlyBot == "" || opts.onlyBot == bc.BotID {
			builders = append(builders, newBuilder(a, bc.BotID, bc, opts))
		}
	}
	if len(builders) == 0 {
		return nil, usageError{Err: fmt.Errorf("--bot %q: the config runs no such bot", opts.onlyBot)}
	}
	// Every section of every bot is decoded before anything is opened, so
	// a bad config fails (exit 2) without touching the database.
	for _, b := range builders {
		a.bots = append(a.bots, b.bt)
		if err := b.decode(ctx); err != nil {
			return nil, err
		}
	}
	if err := oneServesEach(log, a.bots); err != nil {
		return nil, err
	}
	if err := a.openStore(ctx, opts.storeDisk); err != nil {
		return nil, err
	}
	for _, b := range builders {
		if err := b.provisionPlugins(ctx); err != nil {
			return nil, err
		}
		if err := b.buildDispatcher(); err != nil {
			return nil, err
		}
	}
	a.metrics.WatchStore(a.store.AllBots()) // the queues of every bot
	if opts.serveHTTP {
		// `parley run` only: in `parley chat` the one typing sees a store
		// error at once.
		for _, b := range a.bots {
			if err := a.openSpool(b, b.cfg, log, opts.spoolDisk); err != nil {
				return nil, err
			}
		}
		a.buildHTTP(opts)
	}
	return a, nil
}

// oneServesEach leaves the web chat and the terminal, which one process
// has one of each, to the first of bots that enables them: another bot's
// is not started, and the log says so (the web adapter is on by default).
func oneServesEach(log *slog.Logger, bots []*bot) error {
	servedBy := map[string]string{}
	for _, b := range bots {
		// A new slice: a running bot's is read meanwhile (a reload).
		var kept []core.Adapter
		for _, ad := range b.adapters {
			name := ad.Name()
			if (name == "web" || name == "terminal") && servedBy[name] != "" {
				log.Warn("one "+name+" per process: this bot's is not started", "bot", b.id, "served_by", servedBy[name])
				modules.CleanupAll([]core.Adapter{ad})
				continue
			}
			if name == "web" || name == "terminal" {
				servedBy[name] = b.id
			}
			kept = append(kept, ad)
		}
		if len(kept) == 0 {
			return usageError{Err: fmt.Errorf("bot %s has no adapter of its own: give it one under bots[].adapters", b.id)}
		}
		b.adapters = kept
	}
	return nil
}

// defaultBotID is the id of the one bot of a config without bots:.
const defaultBotID = config.DefaultBotID

// openStore opens the database and checks that it takes writes.
func (a *app) openStore(ctx context.Context, disk *diskfault.Disk) error {
	var err error
	if a.store, err = openStore(ctx, a.cfg, a.log.With("component", "store"), disk); err != nil {
		return err
	}
	// One write now: a read-only file or a full disk is found before any
	// adapter starts, not by the first message. (Commands that only read,
	// through withStore, do not write.)
	return a.store.ProbeWrite(ctx)
}

// liveBots are the bots now (a reload may change them).
func (a *app) liveBots() []*bot {
	a.botsMu.RLock()
	defer a.botsMu.RUnlock()
	return slices.Clone(a.bots)
}

// setBots makes bots the app's, after a reload.
func (a *app) setBots(bots []*bot) {
	a.botsMu.Lock()
	defer a.botsMu.Unlock()
	a.bots = bots
}

// adapters are every bot's adapters.
func (a *app) adapters() []core.Adapter {
	var all []core.Adapter
	for _, b := range a.liveBots() {
		all = append(all, b.adapters...)
	}
	return all
}

// startAdapter starts ad of bot b, first taking the lock its intake needs
// across replicas (Telegram polling), which b then holds until stop.
func (a *app) startAdapter(ctx context.Context, b *bot, ad core.Adapter) error {
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
	if err := ad.Start(ctx, a.inbound(b, ad)); err != nil {
		unlock()
		return err
	}
	b.unlocks = append(b.unlocks, unlock)
	return nil
}

// start brings the process up: services, adapters, dispatchers, HTTP.
func (a *app) start(ctx context.Context) error {
	a.runCtx = ctx
	for _, b := range a.bots {
		if err := b.startServices(ctx); err != nil {
			return err
		}
	}
	for _, b := range a.bots {
		if b.spool != nil {
			// Before the adapters: what it kept from the last run goes first.
			b.spool.Start(ctx)
		}
	}
	// One platform failing to start (a revoked token) must not take the
	// others down: it is logged, shown on /healthz, and the rest run.
	var failed []error
	started := 0
	for _, b := range a.bots {
		for _, ad := range b.adapters {
			if err := a.startAdapter(ctx, b, ad); err != nil {
				err = fmt.Errorf("starting adapter %s: %w", ad.Name(), err)
				a.log.Error("adapter did not start; the other adapters keep running", "adapter", ad.Name(), "err", err)
				failed = append(failed, err)
				if a.http != nil {
					a.http.AddHealthCheck(adapterCheck(b, ad), func(context.Context) error { return err })
				}
				continue
			}
			b.started = append(b.started, ad)
			started++
			a.log.Info("adapter started", "adapter", ad.Name())
		}
	}
	if started == 0 {
		return fmt.Errorf("no adapter started: %w", errors.Join(failed...))
	}
	// The dispatchers start once the adapters can send: scheduled messages
	// due at start-up go out at once. DMs that arrived meanwhile are stored
	// and their runs wait for them.
	for _, b := range a.bots {
		if err := b.disp.Start(ctx); err != nil {
			return fmt.Errorf("starting dispatcher: %w", err)
		}
	}
	a.retention = startRetention(ctx, a.store, a.cfg.Retention.Messages, a.opts.clock, a.log.With("component", "retention"))
	a.stopListening = listenForWork(ctx, a.store, a.log, func(topic string) {
		a.botsMu.RLock()
		defer a.botsMu.RUnlock()
		wakeFor(a.bots, topic)
	})
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
	a.reloading.Lock()
	defer a.reloading.Unlock()
	var errs []error
	if err := drainAll(a.bots); err != nil {
		errs = append(errs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adapterStopTimeout)
	defer cancel()
	for _, b := range a.bots {
		errs = append(errs, b.stopAdapters(ctx)...)
	}
	// After the adapters: nothing more comes in.
	for _, b := range a.bots {
		if err := b.stopSpool(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if a.http != nil {
		if err := a.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, b := range a.bots {
		errs = append(errs, b.stopServices(ctx)...)
	}
	if a.stopListening != nil {
		a.stopListening()
	}
	if a.retention != nil {
		a.retention.Stop()
	}
	a.close()
	return errors.Join(errs...)
}

// close releases what build acquired; safe on a partly built app.
func (a *app) close() {
	for _, b := range a.bots {
		b.close(a.log)
	}
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
