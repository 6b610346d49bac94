package engine_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine"
)

// stampAdapter records when each scheduled message reached it. It keeps
// the first time of a key, so it drops a repeat when idempotent.
type stampAdapter struct {
	mu     sync.Mutex
	at     map[string]time.Time // by idempotency key, "job-ID"
	done   chan struct{}
	want   int
	window time.Duration // 0: not idempotent
}

func (a *stampAdapter) Name() string            { return "bench" }
func (a *stampAdapter) Platform() core.Platform { return web }
func (a *stampAdapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: 4096, IdempotencyWindow: a.window}
}
func (a *stampAdapter) Start(context.Context, core.Host) error { return nil }
func (a *stampAdapter) Stop(context.Context) error             { return nil }
func (a *stampAdapter) Send(_ context.Context, m core.OutboundMessage) (core.SendResult, error) {
	now := time.Now()
	a.mu.Lock()
	if _, ok := a.at[m.IdempotencyKey]; ok && a.window > 0 {
		a.mu.Unlock()
		return core.SendResult{PlatformMessageIDs: []string{m.IdempotencyKey}}, nil
	}
	a.at[m.IdempotencyKey] = now
	if len(a.at) == a.want {
		close(a.done)
	}
	a.mu.Unlock()
	return core.SendResult{PlatformMessageIDs: []string{m.IdempotencyKey}}, nil
}

// rssMB is the process's resident set size, from /proc.
func rssMB(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(raw))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return float64(pages*int64(os.Getpagesize())) / (1 << 20)
}

// BenchmarkScheduledSends is issue 9's load: 1,000,000 pending message
// jobs in a SQLite file over 1,000 conversations, 10,000 of them due in
// the same second, an instant adapter. It reports how late the 10,000
// went out (p50, p99), sends/s, and the process's RSS with the million
// pending. The adapter drops a repeated key, as Discord does
// ("idempotent": sends side by side), or does not, as Telegram and Slack
// ("in-doubt": scheduler.max_sends_in_doubt at a time, its default 4).
func BenchmarkScheduledSends(b *testing.B) {
	b.Run("idempotent", func(b *testing.B) { benchScheduledSends(b, true) })
	b.Run("in-doubt", func(b *testing.B) { benchScheduledSends(b, false) })
}

func benchScheduledSends(b *testing.B, idempotent bool) {
	const convs, pending, due = 1000, 1_000_000, 10_000
	for range b.N {
		ctx := context.Background()
		st := openStore(b)
		db := st.DB()
		ts := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }
		now := time.Now()
		for c := 1; c <= convs; c++ {
			require.NoError(b, db.Exec(`INSERT INTO conversations (id, platform, channel_thread_id, last_seq, created_at, updated_at)
				VALUES (?, 'web', ?, 0, ?, ?)`, c, fmt.Sprintf("u%d", c), ts(now), ts(now)).Error)
		}
		far := now.AddDate(0, 6, 0)
		insert := func(from, to int, dueOf func(k int) time.Time) {
			const batch = 500
			for i := from; i < to; i += batch {
				var q strings.Builder
				q.WriteString(`INSERT INTO jobs (conversation_id, kind, status, text, due_at, created_at, updated_at) VALUES `)
				args := make([]any, 0, batch*5)
				for k := i; k < min(i+batch, to); k++ {
					if k > i {
						q.WriteByte(',')
					}
					q.WriteString(`(?, 'message', 'pending', ?, ?, ?, ?)`)
					args = append(args, 1+k%convs, "reminder "+strconv.Itoa(k), ts(dueOf(k)), ts(now), ts(now))
				}
				require.NoError(b, db.Exec(q.String(), args...).Error)
			}
		}
		// The million pending, most of them months away ...
		insert(0, pending-due, func(k int) time.Time { return far.Add(time.Duration(k) * time.Second) })
		// ... and 10,000 due within one second, three seconds from now.
		dueAt := time.Now().Add(3 * time.Second).Truncate(time.Second)
		dueOf := func(id int) time.Time { return dueAt.Add(time.Duration((id-1)%997) * time.Millisecond) }
		insert(pending-due, pending, func(k int) time.Time { return dueOf(k + 1) })
		ad := &stampAdapter{at: map[string]time.Time{}, done: make(chan struct{}), want: due}
		if idempotent {
			ad.window = time.Hour
		}
		d, err := engine.New(engine.Config{Store: st, LLM: instantLLM{}, Adapters: []core.Adapter{ad},
			ScheduledMessages: true})
		require.NoError(b, err)
		require.NoError(b, d.Start(ctx))
		if time.Until(dueAt) < time.Second {
			b.Fatalf("loading took too long: the jobs are due in %v", time.Until(dueAt))
		}
		rss := rssMB(b)
		b.ResetTimer()
		select {
		case <-ad.done:
		case <-time.After(2 * time.Minute):
			b.Fatalf("only %d of %d sent", len(ad.at), due)
		}
		b.StopTimer()
		require.NoError(b, d.Stop(ctx))
		var late []time.Duration
		var first, last time.Time
		for key, at := range ad.at {
			id, err := strconv.Atoi(strings.TrimPrefix(key, "job-"))
			require.NoError(b, err)
			late = append(late, max(at.Sub(dueOf(id)), 0))
			if first.IsZero() || at.Before(first) {
				first = at
			}
			if at.After(last) {
				last = at
			}
		}
		slices.Sort(late)
		ms := func(p float64) float64 { return float64(late[int(p*float64(len(late)-1))].Microseconds()) / 1000 }
		b.ReportMetric(ms(0.50), "p50-late-ms")
		b.ReportMetric(ms(0.99), "p99-late-ms")
		b.ReportMetric(float64(due)/last.Sub(first).Seconds(), "sends/s")
		b.ReportMetric(rss, "rss-MB")
	}
}
