package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core"
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
	})
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
