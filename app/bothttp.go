package app

import (
	"context"
	"net/http"

	"github.com/parleybot/parley/core"
)

// attachHTTP puts bot b on the HTTP server: its adapters' routes, their
// health, its model's and its MCP servers' reports, its spool's check.
func (a *app) attachHTTP(b *bot) {
	mux := http.NewServeMux()
	for _, ad := range b.adapters {
		if m, ok := ad.(core.HTTPMounter); ok {
			m.Mount(mux)
		}
		if h, ok := ad.(core.HealthReporter); ok {
			a.http.AddHealthCheck(adapterCheck(b, ad), func(context.Context) error { return h.Health() })
		}
	}
	a.routes.Set(b.id, mux)
	if sp := b.spool; sp != nil {
		// Unable to write its file, it refuses messages: take the
		// replica out.
		a.http.AddHealthCheck(spoolCheck(b), func(context.Context) error { return sp.Health() })
	}
	// Reported, never failing the check: a load balancer must not take
	// a replica out because the model provider is down.
	a.http.AddHealthDetail(b.part("llm"), modelHealth(b.model))
	b.unwatchModel = a.metrics.WatchModel(b.id, func() float64 { return float64(b.model.Waiting()) },
		func() float64 { return float64(b.model.InFlight()) })
	if b.mcpTools != nil {
		for _, n := range b.mcpTools.Names() {
			a.http.AddHealthDetail(b.part("mcp:"+n), mcpHealth(b.mcpTools, n))
		}
	}
}

// detachHTTP takes bot b off the HTTP server.
func (a *app) detachHTTP(b *bot) {
	a.routes.Remove(b.id)
	for _, ad := range b.adapters {
		a.http.RemoveHealth(adapterCheck(b, ad))
	}
	a.http.RemoveHealth(spoolCheck(b))
	a.http.RemoveHealth(b.part("llm"))
	if b.unwatchModel != nil {
		b.unwatchModel()
	}
	if b.mcpTools != nil {
		for _, n := range b.mcpTools.Names() {
			a.http.RemoveHealth(b.part("mcp:" + n))
		}
	}
}

// part names a part of bot b on /healthz: as is for the default bot,
// with the bot's id for another ("llm:ada", "mcp:ada/tools").
func (b *bot) part(name string) string {
	if b.id == defaultBotID {
		return name
	}
	kind, rest, ok := cutColon(name)
	if !ok {
		return name + ":" + b.id
	}
	return kind + ":" + b.id + "/" + rest
}

// cutColon splits "mcp:tools" at its colon.
func cutColon(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// adapterCheck names ad's check on /healthz: adapter:PLATFORM, or
// adapter:BOT/PLATFORM when the process has several bots.
func adapterCheck(b *bot, ad core.Adapter) string { return b.part("adapter:" + ad.Name()) }

// spoolCheck names b's spool on /healthz.
func spoolCheck(b *bot) string { return b.part("inbound_spool") }
