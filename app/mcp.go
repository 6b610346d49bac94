package app

import (
	"log/slog"
	"slices"
	"time"

	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/mcp"
)

// newMCP builds the client of the enabled mcp.servers, telling observe
// (when set) of every tool call; nil when there is none. Nothing starts
// until the app does.
func newMCP(cfg *config.Config, log *slog.Logger, observe func(server, tool, outcome string, took time.Duration)) (*mcp.Manager, error) {
	names := make([]string, 0, len(cfg.MCP.Servers))
	for n := range cfg.MCP.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	var servers []mcp.Server
	for _, n := range names {
		s := cfg.MCP.Servers[n]
		if !s.IsEnabled() {
			log.Info("mcp server disabled in the config", "server", n)
			continue
		}
		servers = append(servers, mcp.Server{
			Name:       n,
			Command:    s.Command,
			Args:       s.Args,
			Env:        revealAll(s.Env),
			URL:        s.URL,
			Headers:    revealAll(s.Headers),
			Tools:      s.Tools,
			OwnersOnly: s.OwnersOnly,
			Allow:      s.Allow,
			Timeout:    s.CallTimeout(),
		})
	}
	if len(servers) == 0 {
		return nil, nil
	}
	return mcp.New(mcp.Options{
		Servers: servers,
		Logger:  log.With("component", "mcp"),
		Gate:    access.NewGate(cfg.Bot.DMPolicy, cfg.Bot.Owners, cfg.Bot.AllowUsers),
		Vision:  cfg.LLM.Vision,
		Observe: observe,
	})
}

// reportMCP shows each server on /healthz as mcp:NAME, without failing
// revealAll is a map of secrets as the server needs them.
func revealAll(m map[string]config.Secret) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Reveal()
	}
	return out
}
