package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/internal/diskfault"
	"github.com/parleybot/parley/spool"
	"github.com/parleybot/parley/store"
)

// spoolDir is where the inbound spool lives: store.spool.dir, else beside
// the SQLite database, else parley-spool in the working directory. An
// in-memory database (tests, `parley chat` with :memory:) gets a
// temporary directory, removed at close: what it would keep dies with
// the database anyway.
func spoolDir(cfg *config.Config) (dir string, temporary bool, err error) {
	if cfg.Store.Spool.Dir != "" {
		return cfg.Store.Spool.Dir, false, nil
	}
	if cfg.Store.Driver == store.DriverPostgres || cfg.Store.Driver == "postgresql" {
		return "parley-spool", false, nil
	}
	if file := store.SQLiteFile(cfg.Store.DSN.Reveal()); file != "" {
		return file + "-spool", false, nil
	}
	dir, err = os.MkdirTemp("", "parley-spool-")
	return dir, true, err
}

// needsSpool reports whether any adapter's platform never delivers a
// message again: only those go through the spool.
func needsSpool(adapters []core.Adapter) bool {
	for _, a := range adapters {
		if !a.Capabilities().Redelivers {
			return true
		}
	}
	return false
}

// openSpool opens the inbound spool in front of the dispatcher, for the
// adapters whose platform does not redeliver.
func (a *app) openSpool(cfg *config.Config, log *slog.Logger, disk *diskfault.Disk) error {
	if !needsSpool(a.adapters()) {
		return nil
	}
	dir, temporary, err := spoolDir(cfg)
	if err != nil {
		return fmt.Errorf("inbound spool: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	sp, err := spool.Open(spool.Config{
		Dir:      dir,
		MaxBytes: int64(cfg.Store.Spool.MaxSize),
		// A write, not a ping: a full disk answers pings, and a message
		// is given up only while the store takes writes.
		Probe:  a.store.ProbeWrite,
		Logger: log.With("component", "spool"),
		Disk:   disk,
	}, a.bots[0].disp) // one bot for now: its dispatcher takes what the spool holds
	if err != nil {
		if temporary {
			_ = os.RemoveAll(dir)
		}
		return fmt.Errorf("inbound spool (store.spool.dir): %w", err)
	}
	a.spool = sp
	if temporary {
		a.spoolTemp = dir
	}
	a.metrics.WatchSpool(func() float64 { return float64(sp.State().Bytes) })
	return nil
}

// inbound is the host ad of bot b hands its DMs to: the spool for a
// platform that does not redeliver, the bot's dispatcher otherwise.
func (a *app) inbound(b *bot, ad core.Adapter) core.Host {
	if a.spool != nil && !ad.Capabilities().Redelivers {
		return a.spool
	}
	return b.disp
}

// stopSpool hands what the spool holds in memory to the store, or spools
// it, and closes it.
func (a *app) stopSpool(ctx context.Context) error {
	if a.spool == nil {
		return nil
	}
	err := a.spool.Stop(ctx)
	a.spool = nil
	if a.spoolTemp != "" {
		_ = os.RemoveAll(a.spoolTemp)
		a.spoolTemp = ""
	}
	if err != nil {
		return fmt.Errorf("stopping the inbound spool: %w", err)
	}
	return nil
}
