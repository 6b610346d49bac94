// Package httpapi is Parley's HTTP server: one listener (http.listen) for the
// web chat, platform webhooks, the API, /healthz and /metrics. Adapters mount
// their routes on its mux; the server owns timeouts and graceful shutdown.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"
)

// HealthCheck reports one component's health; a nil error is healthy.
type HealthCheck func(ctx context.Context) error

// HealthReport reports the state of a component that /healthz shows but
// that does not decide the status (the model server: a replica whose
// provider is down is not a replica to take out of a load balancer).
type HealthReport func() string

// Server serves Parley's HTTP routes.
type Server struct {
	log    *slog.Logger
	mux    *http.ServeMux
	srv    *http.Server
	mu     sync.Mutex
	checks map[string]HealthCheck
	// reports are shown on /healthz without deciding its status.
	reports map[string]HealthReport
	ln      net.Listener
	done    chan struct{}
}

// New returns a server for addr with /healthz mounted.
func New(addr string, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{log: log, mux: http.NewServeMux(), checks: map[string]HealthCheck{}, reports: map[string]HealthReport{}}
	s.srv = &http.Server{
		Addr:              addr,
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	s.mux.HandleFunc("GET /healthz", s.healthz)
	return s
}

// Mux is where routes are mounted; mount before Start.
func (s *Server) Mux() *http.ServeMux { return s.mux }

// AddHealthCheck adds a component to /healthz.
func (s *Server) AddHealthCheck(name string, c HealthCheck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// AddHealthReport adds a component that /healthz shows but that never
// makes it unhealthy.
func (s *Server) AddHealthReport(name string, r HealthReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reports[name] = r
}

// Start listens and serves in the background. It fails at once if the
// address cannot be bound.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.srv.Addr, err)
	}
	s.ln = ln
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
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

// healthz answers 200 {"status":"ok"} when every check passes, else 503
// with the failing components; the reported components (llm) are shown
// either way and never change the status.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	checks := make(map[string]HealthCheck, len(s.checks))
	for n, c := range s.checks {
		checks[n] = c
	}
	reports := make(map[string]HealthReport, len(s.reports))
	for n, r := range s.reports {
		reports[n] = r
	}
	s.mu.Unlock()
	sort.Strings(names)
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	status, code := "ok", http.StatusOK
	components := map[string]string{}
	for _, n := range names {
		if err := checks[n](ctx); err != nil {
			components[n] = err.Error()
			status, code = "unhealthy", http.StatusServiceUnavailable
			continue
		}
		components[n] = "ok"
	}
	for n, r := range reports {
		components[n] = r()
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
