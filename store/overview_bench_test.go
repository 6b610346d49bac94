package store_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// BenchmarkOverviewQueries times the owner's console pages over a large
// store (storetest.SeedLarge: 1,000,000 messages over 5,000 conversations
// and a year, 500,000 runs, 100,000 jobs), each page's queries issued one
// after the other as the page issues them, and reports each page's p50 and
// p95 load time. Run it with a fixed count, e.g. -benchtime 50x. It seeds
// once per driver: SQLite, and PostgreSQL when PARLEY_TEST_POSTGRES_DSN is
// set.
func BenchmarkOverviewQueries(b *testing.B) {
	const messages, jobs = 1_000_000, 100_000
	drivers := []struct {
		name string
		open func(b *testing.B) *store.Store
	}{
		{"sqlite", func(b *testing.B) *store.Store {
			st, err := store.Open(b.Context(), store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(b.TempDir(), "overview.db")})
			require.NoError(b, err)
			b.Cleanup(func() { _ = st.Close() })
			return st
		}},
		{"postgres", func(b *testing.B) *store.Store {
			if os.Getenv(postgresEnv) == "" {
				b.Skip(postgresEnv + " not set")
			}
			return storetest.OpenPostgres(b)
		}},
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(b, err)
	pages := []struct {
		name string
		load func(ctx context.Context, st *store.Store, now time.Time) error
	}{
		{"overview", func(ctx context.Context, st *store.Store, now time.Time) error {
			if _, err := st.Activity(ctx, now.Add(-24*time.Hour), now, time.Hour); err != nil {
				return err
			}
			if _, err := st.Activity(ctx, now.Add(-7*24*time.Hour), now, 24*time.Hour); err != nil {
				return err
			}
			if _, err := st.RecentFailures(ctx, now.Add(-7*24*time.Hour), 50); err != nil {
				return err
			}
			y, m, d := now.In(berlin).Date()
			if _, err := st.TokensByDay(ctx, time.Date(y, m, d-29, 0, 0, 0, 0, berlin), berlin); err != nil {
				return err
			}
			if _, err := st.CountJobs(ctx, core.JobFilter{Statuses: []core.JobStatus{core.JobPending}}); err != nil {
				return err
			}
			_, err := st.JobsAcross(ctx, core.JobFilter{Statuses: []core.JobStatus{core.JobPending}, Limit: 1})
			return err
		}},
		{"jobs", func(ctx context.Context, st *store.Store, now time.Time) error {
			week := now.Add(7 * 24 * time.Hour)
			upcoming := core.JobFilter{DueFrom: &now, DueTo: &week, Limit: 100}
			if _, err := st.JobsAcross(ctx, upcoming); err != nil {
				return err
			}
			if _, err := st.JobsAcross(ctx, core.JobFilter{Statuses: []core.JobStatus{core.JobFailed}, Recent: true, Limit: 50}); err != nil {
				return err
			}
			_, err := st.CountJobs(ctx, upcoming)
			return err
		}},
		{"search", func(ctx context.Context, st *store.Store, now time.Time) error {
			if _, err := st.SearchConversations(ctx, "maria", 50, 0); err != nil {
				return err
			}
			_, err := st.SearchConversations(ctx, "coffee", 50, 0)
			return err
		}},
		// The worst cases of a search: a word few conversations hold, and
		// one none does (every conversation is looked at).
		{"search-rare", func(ctx context.Context, st *store.Store, now time.Time) error {
			_, err := st.SearchConversations(ctx, storetest.SeedRareWord, 50, 0)
			return err
		}},
		{"search-none", func(ctx context.Context, st *store.Store, now time.Time) error {
			_, err := st.SearchConversations(ctx, "quixotic", 50, 0)
			return err
		}},
	}
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			st := d.open(b)
			ctx := b.Context()
			require.NoError(b, st.Migrate(ctx))
			start := time.Now()
			require.NoError(b, storetest.SeedLarge(ctx, st, messages, jobs))
			b.Logf("%s: seeded %d messages and %d jobs in %v", d.name, messages, jobs, time.Since(start).Round(100*time.Millisecond))
			for _, p := range pages {
				b.Run(p.name, func(b *testing.B) {
					var lat []time.Duration
					for b.Loop() {
						t := time.Now()
						if err := p.load(ctx, st, t); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t))
					}
					slices.Sort(lat)
					pct := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
					b.ReportMetric(pct(0.50), "p50-ms")
					b.ReportMetric(pct(0.95), "p95-ms")
				})
			}
		})
	}
}
