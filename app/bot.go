package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/app/modules"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/mcp"
	"github.com/parleybot/parley/spool"
	"github.com/parleybot/parley/store"
)

// bot is one bot of the process: its model, plugins, adapters and
// dispatcher, on the process's store, HTTP server and spool.
type bot struct {
	// id names the bot (config bots[].id; "default" for a config
	// without bots:).
	id  string
	cfg *config.Config
	log *slog.Logger

	// store is the bot's view of the process's store: its conversations,
	// runs and jobs only.
	store       *store.Store
	model       *llm.Client
	transcriber core.Transcriber
	speaker     core.Speaker // nil: replies go as text
	// env is what adapters and plugins are provisioned with; the store
	// and the model join it once the store is open.
	env      core.Env
	decoded  []core.Plugin // the enabled plugins, not yet provisioned
	jobWaker *core.Waker
	mcpTools *mcp.Manager // nil without MCP servers

	plugins  []core.Plugin
	adapters []core.Adapter
	disp     *engine.Dispatcher
	started  []core.Adapter
	// unlocks release the cross-replica locks the started adapters hold.
	unlocks  []func()
	services []core.Service
	// spool keeps the DMs of the bot's platforms that do not redeliver
	// while the store cannot take them; spoolTemp is its directory when
	// temporary.
	spool     *spool.Spool
	spoolTemp string
	// unwatchSpool and unwatchModel take the spool and the model off the
	// metrics.
	unwatchSpool, unwatchModel func()
}

// startServices starts the plugins that run in the background.
func (b *bot) startServices(ctx context.Context) error {
	for _, p := range b.plugins {
		if s, ok := p.(core.Service); ok {
			if err := s.Start(ctx); err != nil {
				return fmt.Errorf("starting plugin %s: %w", p.Name(), err)
			}
			b.services = append(b.services, s)
		}
	}
	return nil
}

// drain stops the bot's dispatcher, waiting (bounded) for its in-flight
// turns.
func (b *bot) drain() error {
	if b.disp == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	return b.disp.Stop(ctx)
}

// stopAdapters stops the started adapters and lets go of their locks.
func (b *bot) stopAdapters(ctx context.Context) []error {
	var errs []error
	for _, ad := range b.started {
		if err := ad.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping adapter %s: %w", ad.Name(), err))
		}
	}
	for _, unlock := range b.unlocks {
		unlock()
	}
	b.unlocks = nil
	return errs
}

// stopServices stops the plugins' background services.
func (b *bot) stopServices(ctx context.Context) []error {
	var errs []error
	for _, s := range b.services {
		if err := s.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping service: %w", err))
		}
	}
	return errs
}

// close releases what building the bot acquired.
func (b *bot) close(log *slog.Logger) {
	if b.spool != nil {
		ctx, cancel := context.WithTimeout(context.Background(), adapterStopTimeout)
		if err := b.stopSpool(ctx); err != nil {
			log.Error("closing the inbound spool", "bot", b.id, "err", err)
		}
		cancel()
	}
	modules.CleanupAll(b.adapters)
	modules.CleanupAll(b.plugins)
}

// drainAll drains every bot's turns at once: a stop waits for the
// slowest, not for their sum.
func drainAll(bots []*bot) error {
	errs := make([]error, len(bots))
	var wg sync.WaitGroup
	for i, b := range bots {
		wg.Go(func() { errs[i] = b.drain() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// adapterStopTimeout bounds stopping a bot's adapters and services.
const adapterStopTimeout = 10 * time.Second

// listenForWork wakes the bots whose runs and jobs other processes queue
// (PostgreSQL's LISTEN/NOTIFY): one connection for the process, each
// wake-up handed to wake. The returned stop ends it.
func listenForWork(ctx context.Context, st *store.Store, log *slog.Logger, wake func(topic string)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		engine.ListenForWork(ctx, st, log, wake)
	}()
	return func() {
		cancel()
		<-done
	}
}

// wakeFor wakes the loops of the bot topic names ("runs:ada", store
// migration 19), or of every bot for a topic that names none.
func wakeFor(bots []*bot, topic string) {
	_, id, named := strings.Cut(topic, ":")
	for _, b := range bots {
		if (!named || b.id == id) && b.disp != nil {
			b.disp.WakeFor(topic)
		}
	}
}
