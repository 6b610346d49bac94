// Package httpapi is Parley's HTTP server: one listener (http.listen) for the
// web chat, platform webhooks, the API, /healthz and /metrics. Adapters mount
// their routes on its mux; the server owns what every request shares:
// timeouts (a deadline for bodies and a minimum rate, none for streams),
// the cap on connections and each address's share of it, the client's
// address through trusted proxies (ClientIP), the back-off on wrong
// tokens, and graceful shutdown.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"
)

// HealthCheck reports one component's health; a nil error is healthy.
type HealthCheck func(ctx context.Context) error

// HealthReport reports the state of a component that /healthz shows but
// that does not decide the status (the model server: a replica whose
// provider is down is not a replica to take out of a load balancer).
type HealthReport func() string

// Report is what a reported component says of itself: its state as
// /healthz shows it, and for the console the last error and since when
// the state holds.
type Report struct {
	State string
	// Error is the last error ("" when there is none).
	Error string
	// Since is when State began (zero when unknown).
	Since time.Time
}

// HealthDetail is a HealthReport with the last error and since when.
type HealthDetail func() Report

// Component is one component of /healthz as it was just computed.
type Component struct {
	Name string
	// State is "ok" or "failing" for a check, and what a report says
	// ("ok", "unknown", "auth", "down: ...") for a reported component.
	State string
	// Error is a failing check's error, or a report's last error.
	Error string
	// Since is when a report's state began (zero when unknown; checks
	// do not say).
	Since time.Time
	// Decides is true for a check, which decides /healthz's status, and
	// false for a reported component, which is only shown.
	Decides bool
}

// Healthy reports whether the component is well: a check that passed, or
// a report that says "ok".
func (c Component) Healthy() bool { return c.State == "ok" }

// Defaults of Options.
const (
	DefaultMaxConnections = 2048
	// DefaultMaxConnectionsPerIP is each address's share: a browser
	// opens up to 6 connections to a host, and the web chat lets an
	// address hold 16 pages; 64 leaves room for a few households
	// behind one NAT.
	DefaultMaxConnectionsPerIP = 64
	DefaultReadTimeout         = 30 * time.Second
	// DefaultMinBodyRate is the least rate, in bytes a second, a body
	// must arrive at: a bad mobile link does ten times that.
	DefaultMinBodyRate = 1024
)

// bodyGrace is how long a body may take beyond its size at the minimum
// rate: a few round trips on a bad link. A login form of 100 bytes has
// about 5 s, not http.read_timeout.
const bodyGrace = 5 * time.Second

// fdReserve is how many file descriptors the cap on connections leaves
// to everything else (the store, the platforms' and the model's clients,
// MCP servers, log files) when the open-file limit is low.
const fdReserve = 256

// Options are the limits of a Server.
type Options struct {
	// MaxConnections caps open connections (http.max_connections;
	// default DefaultMaxConnections), lowered to fit the open-file limit.
	MaxConnections int
	// MaxConnectionsPerIP is each address's share of MaxConnections
	// (http.max_connections_per_ip; 0: DefaultMaxConnectionsPerIP,
	// negative: no share). The address is the connection's peer (an
	// IPv6 /64): a connection is counted before any header names a
	// client. A trusted proxy's connections have no share, since they
	// carry all its clients; the proxy must bound each client's
	// connections itself.
	MaxConnectionsPerIP int
	// ReadTimeout is how long a request's body may take to arrive after
	// its headers (http.read_timeout; default DefaultReadTimeout).
	// Requests without a body, such as event streams, are not bound by
	// it: they only write.
	ReadTimeout time.Duration
	// MinBodyRate is the least rate, in bytes a second, a body must
	// arrive at (http.min_body_rate; default DefaultMinBodyRate): a body
	// of known length has bodyGrace plus its length at this rate, if
	// that is less than ReadTimeout, and at a cap a body that has fallen
	// behind it gives its connection's place to a new one.
	MinBodyRate int64
	// TrustedProxies are the proxies whose X-Forwarded-For is believed
	// (http.trusted_proxies; see ClientIP).
	TrustedProxies []netip.Prefix
	// Now is the clock of the rate-limited log lines and of how long a
	// connection has been silent (default time.Now); the body's deadline
	// is the socket's, on the wall clock.
	Now func() time.Time
}

// Server serves Parley's HTTP routes.
type Server struct {
	log     *slog.Logger
	mux     *http.ServeMux
	srv     *http.Server
	opts    Options
	proxies proxies
	mu      sync.Mutex
	checks  map[string]HealthCheck
	// reports are shown on /healthz without deciding its status.
	reports map[string]HealthDetail
	ln      net.Listener
	lim     *connLimiter
	backoff *Backoff
	done    chan struct{}
}

// New returns a server for addr with /healthz mounted and the default
// Options.
func New(addr string, log *slog.Logger) *Server { return NewWithOptions(addr, log, Options{}) }

// NewWithOptions returns a server for addr with /healthz mounted.
func NewWithOptions(addr string, log *slog.Logger, o Options) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxConnectionsPerIP == 0 {
		o.MaxConnectionsPerIP = DefaultMaxConnectionsPerIP
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.MinBodyRate <= 0 {
		o.MinBodyRate = DefaultMinBodyRate
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{log: log, mux: http.NewServeMux(), opts: o, proxies: proxies(o.TrustedProxies),
		checks: map[string]HealthCheck{}, reports: map[string]HealthDetail{}, backoff: NewBackoff(BackoffConfig{Now: o.Now})}
	s.srv = &http.Server{
		Addr:    addr,
		Handler: http.HandlerFunc(s.serve),
		// Bodies get their deadline from serve rather than ReadTimeout:
		// the same deadline (net/http lifts both once the body is read,
		// so event streams live on), but serve also ends a request
		// answered before its body at once, where net/http would first
		// wait out the deadline skipping the rest of the body.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          stdlog.New(errorLog{log}, "", 0),
		ConnContext:       withConn,
		ConnState: func(c net.Conn, st http.ConnState) {
			if s.lim != nil {
				s.lim.connState(c, st)
			}
		},
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	return s
}

// errorLog takes the lines net/http logs: a handler's panic is an error,
// failed accepts are logged by the listener (at warn, rate-limited), and
// the rest (a client's malformed TLS hello, a broken pipe) stays at debug.
type errorLog struct{ log *slog.Logger }

func (e errorLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	switch {
	case strings.HasPrefix(msg, "http: Accept error"):
	case strings.Contains(msg, "panic serving"):
		e.log.Error("http handler panicked", "err", msg)
	default:
		e.log.Debug(msg)
	}
	return len(p), nil
}

// Backoff is the server's back-off on wrong tokens, for everything on it
// that checks http.api_token (the API and the console's login): one
// guesser, one count, whichever door it knocks on.
func (s *Server) Backoff() *Backoff { return s.backoff }

// ConnStats counts the listener's connections (zero before Start).
func (s *Server) ConnStats() ConnStats {
	if s.lim == nil {
		return ConnStats{Max: s.opts.MaxConnections, PerAddress: max(s.opts.MaxConnectionsPerIP, 0)}
	}
	return s.lim.snapshot()
}

// Handler is the server's handler: the mux behind what every request
// goes through (the client's address, the body's deadline).
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// Mux is where routes are mounted; mount before Start.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// AddHealthCheck adds a component to /healthz.
func (s *Server) AddHealthCheck(name string, c HealthCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// RemoveHealth takes the component name off /healthz (a check or a
// report): its part is gone (a bot removed by a reload).
func (s *Server) RemoveHealth(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.checks, name)
	delete(s.reports, name)
}

// AddHealthReport adds a component that /healthz shows but that never
// makes it unhealthy.
func (s *Server) AddHealthReport(name string, r HealthReport) {
	s.AddHealthDetail(name, func() Report { return Report{State: r()} })
}

// AddHealthDetail adds a reported component (never making /healthz
// unhealthy) that also says its last error and since when, for the
// console; /healthz shows its State.
func (s *Server) AddHealthDetail(name string, r HealthDetail) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports[name] = r
}

// OnShutdown registers f to run when Shutdown begins, for the owners of
// long-lived streams (the console's live updates) to end them: Shutdown
// waits for open requests.
func (s *Server) OnShutdown(f func()) { s.srv.RegisterOnShutdown(f) }

// Start listens and serves in the background. It fails at once if the
// address cannot be bound.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.srv.Addr, err)
	}
	limit := s.opts.MaxConnections
	if fds := openFileLimit(); fds > 0 && limit > fds-fdReserve {
		limit = max(fds-fdReserve, fds/2)
		s.log.Warn("http.max_connections is above what the open-file limit leaves for connections: lowered; raise the limit (ulimit -n) for more",
			"max_connections", s.opts.MaxConnections, "lowered_to", limit, "open_file_limit", fds)
	}
	perAddr := max(s.opts.MaxConnectionsPerIP, 0)
	if perAddr >= limit {
		perAddr = 0 // a share of all is the cap itself
	}
	s.lim = newConnLimiter(ln, connLimits{max: limit, perAddr: perAddr, exempt: s.proxies, minRate: s.opts.MinBodyRate},
		s.log, s.opts.Now)
	s.ln = s.lim
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(s.lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "err", err)
		}
	}()
	s.log.Info("http server listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() string {
	if s.ln == nil {
		return s.srv.Addr
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting connections and waits for open requests until
// ctx is done; long-lived streams are closed by their owners first.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	if err != nil {
		return fmt.Errorf("shutting down http server: %w", err)
	}
	return nil
}

// Components computes every component of /healthz, sorted by name: the
// checks (each given up to 5 seconds) and the reported components.
func (s *Server) Components(ctx context.Context) []Component {
	s.mu.Lock()
	checks := make(map[string]HealthCheck, len(s.checks))
	for n, c := range s.checks {
		checks[n] = c
	}
	reports := make(map[string]HealthDetail, len(s.reports))
	for n, r := range s.reports {
		reports[n] = r
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out := make([]Component, 0, len(checks)+len(reports))
	for n, c := range checks {
		comp := Component{Name: n, State: "ok", Decides: true}
		if err := c(ctx); err != nil {
			comp.State, comp.Error = "failing", err.Error()
		}
		out = append(out, comp)
	}
	for n, r := range reports {
		rep := r()
		out = append(out, Component{Name: n, State: rep.State, Error: rep.Error, Since: rep.Since})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// healthz answers 200 {"status":"ok"} when every check passes, else 503
// with the failing components; the reported components (llm) are shown
// either way and never change the status. A check shows "ok" or its
// error, a report its state.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	components := map[string]string{}
	for _, c := range s.Components(r.Context()) {
		switch {
		case !c.Decides:
			components[c.Name] = c.State
		case c.Healthy():
			components[c.Name] = "ok"
		default:
			components[c.Name] = c.Error
			status, code = "unhealthy", http.StatusServiceUnavailable
		}
	}
	WriteJSON(w, code, map[string]any{"status": status, "components": components})
}

// WriteJSON writes v as a JSON response with the status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError writes {"error": msg} with the status code.
func WriteError(w http.ResponseWriter, code int, msg string) {
	WriteJSON(w, code, map[string]string{"error": msg})
}
