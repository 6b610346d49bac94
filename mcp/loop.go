package mcp

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/parleybot/parley/internal/backoff"
)

// server is one configured server and its connection loop. The loop
// goroutine owns the connection; everyone else reads state, cur and
// entries under mu.
type server struct {
	m      *Manager
	cfg    Server
	log    *slog.Logger // with server=NAME
	redact *redactor

	mu      sync.Mutex
	st      string
	cur     *conn        // nil while down
	entries []*toolEntry // the tools offered now (nil while down)

	warnMu sync.Mutex
	warned map[string]bool // warnings already logged, by key
}

func newServer(m *Manager, cfg Server) *server {
	return &server{
		m:      m,
		cfg:    cfg,
		log:    m.log.With("server", cfg.Name),
		redact: newRedactor(cfg),
		st:     StateStarting,
		warned: map[string]bool{},
	}
}

// run connects, serves until the session ends, and reconnects with
// exponential backoff, until ctx ends.
func (s *server) run(ctx context.Context) {
	opts := s.m.opts
	delay := opts.RestartMin
	// warned says whether this episode of failures has been logged at warn:
	// the first failure is worth a warning, every retry after it is not.
	warned := false
	for {
		began := time.Now()
		c, entries, err := s.m.connect(ctx, s)
		if ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			s.setDown("stopped")
			return
		}
		if err != nil {
			reason := s.setDown(err.Error())
			level := slog.LevelWarn
			if warned {
				level = slog.LevelDebug
			}
			warned = true
			s.log.Log(ctx, level, "mcp: server is down", "reason", reason, "retry_in", delay)
		} else {
			s.setUp(c, entries)
			s.log.Info("mcp: server is up", "tools", len(entries))
			warned = false
			reason := s.serve(ctx, c)
			if ctx.Err() != nil {
				s.setDown("stopped")
				return
			}
			reason = s.setDown(reason)
			if time.Since(began) >= opts.RestartMax {
				// It stayed up a while: this is a new failure, not the
				// same one again.
				delay = opts.RestartMin
			}
			warned = true
			s.log.Warn("mcp: server went down", "reason", reason, "retry_in", delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.setDown("stopped")
			return
		case <-t.C:
		}
		delay = backoff.Policy{Initial: opts.RestartMin, Max: opts.RestartMax}.Next(delay)
	}
}

// serve follows an open session until it ends or ctx ends, re-listing the
// tools when the server says they changed. It returns why it ended.
func (s *server) serve(ctx context.Context, c *conn) string {
	ended := make(chan error, 1)
	go func() { ended <- c.session.Wait() }()
	for {
		select {
		case err := <-ended:
			close(c.done)
			return c.endReason(err, c.close())
		case <-c.relist:
			s.refresh(ctx, c)
		case <-ctx.Done():
			s.setDown("stopped")
			c.close()
			<-ended
			close(c.done)
			return "stopped"
		}
	}
}

// refresh lists the tools again after notifications/tools/list_changed.
// On failure the old list stays: if the session died, serve hears of it.
func (s *server) refresh(ctx context.Context, c *conn) {
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.InitTimeout)
	defer cancel()
	entries, err := s.list(ctx, c)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("mcp: listing tools again failed", "error", s.redact.reason(err.Error()))
		}
		return
	}
	changed := false
	s.update(func() {
		changed = !slices.EqualFunc(s.entries, entries, func(a, b *toolEntry) bool { return a.tool == b.tool })
		s.entries = entries
	})
	if changed {
		s.log.Info("mcp: tools changed", "tools", len(entries))
	}
}

func (s *server) setUp(c *conn, entries []*toolEntry) {
	s.update(func() { s.st, s.cur, s.entries = StateOK, c, entries })
}

// setDown records why the server is down and withdraws its tools. It
// returns the reason as stored: redacted and short.
func (s *server) setDown(reason string) string {
	reason = s.redact.reason(reason)
	s.update(func() { s.st, s.cur, s.entries = stateDown+reason, nil, nil })
	return reason
}

// update changes the server's fields with f and rebuilds the catalogue,
// both under the catalogue's lock, so that whoever reads the state
// through Manager.State finds the tools offered to match it.
func (s *server) update(f func()) {
	s.m.catMu.Lock()
	defer s.m.catMu.Unlock()
	s.mu.Lock()
	f()
	s.mu.Unlock()
	s.m.rebuildLocked()
}

func (s *server) state() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// snapshot returns the server's state, connection and tools now.
func (s *server) snapshot() (string, *conn, []*toolEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st, s.cur, s.entries
}

// warnOnce logs a warning the first time key is seen.
func (s *server) warnOnce(key, msg string, args ...any) {
	s.warnMu.Lock()
	seen := s.warned[key]
	s.warned[key] = true
	s.warnMu.Unlock()
	if !seen {
		s.log.Warn(msg, args...)
	}
}
