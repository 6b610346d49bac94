package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// ProbeWrite writes the store_probe row through the store's ordinary
// write path, to prove the database takes writes now. Pings and reads
// pass on a read-only file or a full disk; this does not. Its error says
// where the database is and the likely cause (see Explain).
func (s *Store) ProbeWrite(ctx context.Context) error {
	t := s.q.t(s.now())
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO store_probe (id, probed_at) VALUES (1, ?)
			ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at`, t).Error
	})
	if err != nil {
		return fmt.Errorf("the store cannot write: %w", s.explain(err))
	}
	return nil
}

// DefaultProbeEvery is how often a HealthCheck writes at most.
const DefaultProbeEvery = 10 * time.Second

// HealthCheck is the store's check for /healthz: a ping on every call,
// and a write probe at most once per interval, whose result is kept in
// between (a load balancer asking every second must not make the store
// write every second).
type HealthCheck struct {
	st    *Store
	every time.Duration
	mu    sync.Mutex
	at    time.Time
	err   error
}

// NewHealthCheck returns the check of st, probing at most once per every
// (default DefaultProbeEvery) on the store's clock.
func NewHealthCheck(st *Store, every time.Duration) *HealthCheck {
	if every <= 0 {
		every = DefaultProbeEvery
	}
	return &HealthCheck{st: st, every: every}
}

// Check pings the store and reports the last write probe, probing anew
// when the last is older than the interval. Concurrent calls wait for
// one probe.
func (h *HealthCheck) Check(ctx context.Context) error {
	if err := h.st.Ping(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.st.now()
	if h.at.IsZero() || now.Sub(h.at) >= h.every || now.Before(h.at) {
		h.at, h.err = now, h.st.ProbeWrite(ctx)
	}
	return h.err
}
