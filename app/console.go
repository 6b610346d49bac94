package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/mcp"
)

// newConsole builds the web console on the app's store (every bot's
// rows, and each bot's view for its picker), health and adapters. It is
// mounted by the caller, and its live streams end when the HTTP server
// shuts down.
func newConsole(a *app, cfg *config.Config, log *slog.Logger, clock core.Clock, jobsChanged func()) *console.Console {
	var platforms []core.Platform
	seen := map[core.Platform]bool{}
	for _, ad := range a.adapters() {
		if p := ad.Platform(); !seen[p] {
			seen[p] = true
			platforms = append(platforms, p)
		}
	}
	return console.New(console.Config{
		Token:       cfg.HTTP.APIToken.Reveal(),
		Store:       a.store.AllBots(), // it creates no conversation
		Bots:        a.consoleBots,
		Facts:       pluginFacts(a.store.Database()),
		Mood:        pluginMood(a.store.Database()),
		Location:    cfg.Location(),
		Clock:       clock,
		Logger:      log.With("component", "console"),
		Health:      a.http.Components,
		Prices:      cfg.Console.Prices,
		JobsChanged: jobsChanged,
		Fetch:       a.fetchAttachment,
		Platforms:   platforms,
		Backoff:     a.http.Backoff(), // the API's: one token, one count
		UserData:    consoleData{a: a, clock: clock},
	})
}

// consoleData is the console's hand on users' data and pairing codes.
type consoleData struct {
	a     *app
	clock core.Clock
}

func (d consoleData) Export(ctx context.Context, id int64) ([]core.OutboundFile, error) {
	return exportFiles(ctx, d.a.store.AllBots(), d.a.store.Database(), id, d.clock.Now())
}

func (d consoleData) Erase(ctx context.Context, id int64) (int64, error) {
	return erasure{d.a}.conversation(ctx, id, d.clock.Now())
}

func (d consoleData) Waiting(ctx context.Context, now time.Time) ([]access.Request, error) {
	return d.a.store.AllBots().Pairings(ctx, now, false)
}

// Decide answers a code of any bot's, and the bot that gave it tells a
// user let in.
func (d consoleData) Decide(ctx context.Context, code string, approve bool) (access.Request, error) {
	p, err := d.a.store.AllBots().DecidePairing(ctx, code, approve, "console", d.clock.Now())
	if err != nil || !approve {
		return p, err
	}
	for _, b := range d.a.liveBots() {
		if b.id == p.BotID && b.disp != nil {
			b.disp.Welcome(ctx, p)
		}
	}
	return p, nil
}

// consoleBots are the bots the console picks from, as they are now.
func (a *app) consoleBots() []console.Bot {
	var out []console.Bot
	for _, b := range a.liveBots() {
		out = append(out, console.Bot{ID: b.id, Store: b.store})
	}
	return out
}

// fetchAttachment downloads a user's file through the adapter of its bot
// and platform, for the console's thumbnails: another bot's token would
// not find it.
func (a *app) fetchAttachment(ctx context.Context, botID string, p core.Platform, att core.Attachment, max int64) ([]byte, error) {
	for _, b := range a.liveBots() {
		if b.id != botID {
			continue
		}
		for _, ad := range b.adapters {
			if f, ok := ad.(core.AttachmentFetcher); ok && ad.Platform() == p {
				return f.FetchAttachment(ctx, att, max)
			}
		}
	}
	return nil, fmt.Errorf("no adapter of bot %s on %s fetches files", botID, p)
}

// modelHealth is the model server's health for /healthz (its state) and
// the console (with the last error and since when).
func modelHealth(model *llm.Client) httpapi.HealthDetail {
	return func() httpapi.Report {
		h := model.Health()
		return httpapi.Report{State: h.State, Error: h.Err, Since: h.Since}
	}
}

// mcpHealth is an MCP server's state for /healthz ("down: why") and the
// console (the why as its error).
func mcpHealth(mgr *mcp.Manager, name string) httpapi.HealthDetail {
	return func() httpapi.Report {
		st := mgr.State(name)
		r := httpapi.Report{State: st}
		if why, down := strings.CutPrefix(st, "down: "); down {
			r.Error = why
		}
		return r
	}
}
