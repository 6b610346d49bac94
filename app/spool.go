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

// openSpool opens bot b's inbound spool in front of its dispatcher, for
// its adapters whose platform does not redeliver. Each bot has its own
// (a bot other than the default in a folder of its own under the
// directory), so that what it keeps goes back to that bot alone.
func (a *app) openSpool(b *bot, cfg *config.Config, log *slog.Logger, disk *diskfault.Disk) error {
	if !needsSpool(b.adapters) {
		return nil
	}
	dir, temporary, err := spoolDir(cfg)
	if err != nil {
		return fmt.Errorf("inbound spool: %w", err)
	}
	if b.id != defaultBotID && !temporary {
		dir = filepath.Join(dir, b.id)
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
	}, b.disp)
	if err != nil {
		if temporary {
			_ = os.RemoveAll(dir)
		}
		return fmt.Errorf("inbound spool (store.spool.dir): %w", err)
	}
	b.spool = sp
	if temporary {
		b.spoolTemp = dir
	}
	b.unwatchSpool = a.metrics.WatchSpool(b.id, func() float64 { return float64(sp.State().Bytes) })
	return nil
}

// inbound is the host ad of bot b hands its DMs to: the bot's spool for a
// platform that does not redeliver, its dispatcher otherwise.
func (a *app) inbound(b *bot, ad core.Adapter) core.Host {
	if b.spool != nil && !ad.Capabilities().Redelivers {
		return b.spool
	}
	return b.disp
}

// stopSpool hands what b's spool holds in memory to the store, or spools
// it, and closes it.
func (b *bot) stopSpool(ctx context.Context) error {
	if b.spool == nil {
		return nil
	}
	err := b.spool.Stop(ctx)
	b.spool = nil
	if b.spoolTemp != "" {
		_ = os.RemoveAll(b.spoolTemp)
		b.spoolTemp = ""
	}
	if err != nil {
		return fmt.Errorf("stopping the inbound spool of bot %s: %w", b.id, err)
	}
	return nil
}
