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
// write every second). A write of the bot's own that the database could
// not take (core.ErrStoreUnavailable) fails the check at once, and for an
// interval after the last such failure: the probe's one-row upsert can
// still fit where inserts no longer do (SQLite reuses its WAL's space),
// so its passing alone does not say the store takes writes again.
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

// Check pings the store, fails while a write failed within the interval,
// and reports the last write probe, probing anew when the last is older
// than the interval or older than a failed write. Concurrent calls wait
// for one probe.
func (h *HealthCheck) Check(ctx context.Context) error {
	if err := h.st.Ping(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.st.now()
	failedAt, failed := h.st.failures.last()
	if failed != nil && now.Sub(failedAt) < h.every {
		return fmt.Errorf("the store cannot write: %w", failed)
	}
	stale := failed != nil && failedAt.After(h.at) // the kept result predates the failure
	if h.at.IsZero() || stale || now.Sub(h.at) >= h.every || now.Before(h.at) {
		h.at, h.err = now, h.st.ProbeWrite(ctx)
	}
	return h.err
}
