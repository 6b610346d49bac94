package app

import (
	"log/slog"

	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/httpapi"
)

// newHTTPServer is the server on http.listen with the http section's
// limits, after a word on who can reach it.
func newHTTPServer(cfg *config.Config, log *slog.Logger) *httpapi.Server {
	warnExposure(cfg, log)
	perIP := cfg.HTTP.MaxConnectionsPerIP
	if perIP == 0 {
		perIP = -1 // the config's "no share"; the server's 0 is its default
	}
	return httpapi.NewWithOptions(cfg.HTTP.Listen, log, httpapi.Options{
		MaxConnections:      cfg.HTTP.MaxConnections,
		MaxConnectionsPerIP: perIP,
		ReadTimeout:         cfg.HTTP.ReadTimeout,
		MinBodyRate:         int64(cfg.HTTP.MinBodyRate),
		TrustedProxies:      cfg.HTTP.TrustedPrefixes(),
	})
}

// warnExposure says, at start, what other machines can reach on
// http.listen. The web chat there without http.public is refused when
// the config loads (anyone could run up the model bill); the console and
// the API are guarded by http.api_token, so they are served, with a
// warning until http.public says it is meant: the token crosses the
// network in clear text unless a TLS proxy is in front.
func warnExposure(cfg *config.Config, log *slog.Logger) {
	h := cfg.HTTP
	if !h.BeyondLoopback() {
		return
	}
	token := h.APIToken.Reveal() != ""
	webOn := cfg.WebChatOn()
	switch {
	case h.Public && webOn:
		log.Info("http.listen is public (http.public: true): anyone who reaches it can use the web chat, within its per-address limits",
			"listen", h.Listen)
	case h.Public:
	case token:
		log.Warn("http.listen "+h.Listen+" can be reached from other machines, and the console (/console/) and the API (/api/) are "+
			"served there, guarded only by http.api_token, which plain HTTP sends in clear text. Put a TLS reverse proxy in front, "+
			"or listen on 127.0.0.1; set http.public: true if this is meant", "listen", h.Listen)
	}
}
