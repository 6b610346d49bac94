package store_test

import (
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
)

// BenchmarkTurnQueries measures the store's share of one dispatcher turn on
// a SQLite file: the user message arrives (RecordInbound planning a run), a
// worker claims the run, reads the last 50 messages and completes it with
// one reply. Turns rotate over 16 conversations with some history.
func BenchmarkTurnQueries(b *testing.B) {
	ctx := b.Context()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(b.TempDir(), "bench.db")})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	require.NoError(b, st.Migrate(ctx))

	const convs = 16
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := 0
	now := func() time.Time { tick++; return t0.Add(time.Duration(tick) * time.Millisecond) }
	turn := func(i int) {
		in, err := st.RecordInbound(ctx, core.InboundRecord{
			Platform: web, ChannelThreadID: fmt.Sprintf("bench-%d", i%convs),
			ChannelUserID: "u", DisplayName: "Bench", Text: "how are you doing today?", Now: now(), PlanRun: true,
		})
		if err != nil {
			b.Fatal(err)
		}
		t := now()
		run, err := st.ClaimRun(ctx, "bench", t)
		if err != nil || run == nil {
			b.Fatalf("claim: %v %v", run, err)
		}
		msgs, err := st.RecentMessages(ctx, in.Conversation.ID, 50)
		if err != nil || len(msgs) == 0 {
			b.Fatalf("recent: %d %v", len(msgs), err)
		}
		err = st.CompleteRun(ctx, run.ID, "bench", core.RunCompletion{
			Status:       core.RunSucceeded,
			Messages:     []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: "I am well, thank you for asking!"}},
			Record:       core.RunRecord{PromptID: "companion", Rounds: 1, Output: "I am well"},
			PromptTokens: 900, CompletionTokens: 12, TotalTokens: 912,
			Now: now(),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	// History: every conversation starts with 60 messages.
	for i := range convs * 30 {
		turn(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		turn(i)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}

// BenchmarkTurnQueriesParallel runs the same turn from GOMAXPROCS*2 workers
// at once, as a dispatcher with several workers does: reads overlap writes
// (they have their own pool), writes queue for SQLite's single writer.
// A worker completes whatever run it claims, which may be another
// worker's conversation.
func BenchmarkTurnQueriesParallel(b *testing.B) {
	ctx := b.Context()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(b.TempDir(), "bench.db")})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	require.NoError(b, st.Migrate(ctx))
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var worker atomic.Int64
	b.SetParallelism(2)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := worker.Add(1)
		owner := fmt.Sprintf("bench-%d", w)
		for i := 0; pb.Next(); i++ {
			now := t0.Add(time.Duration(i) * time.Millisecond)
			if _, err := st.RecordInbound(ctx, core.InboundRecord{
				Platform: web, ChannelThreadID: fmt.Sprintf("bench-%d-%d", w, i%4),
				Text: "how are you doing today?", Now: now, PlanRun: true,
			}); err != nil {
				b.Error(err)
				return
			}
			run, err := st.ClaimRun(ctx, owner, now.Add(time.Hour))
			if err != nil {
				b.Error(err)
				return
			}
			if run == nil {
				continue
			}
			if _, err := st.RecentMessages(ctx, run.ConversationID, 50); err != nil {
				b.Error(err)
				return
			}
			if err := st.CompleteRun(ctx, run.ID, owner, core.RunCompletion{
				Status:   core.RunSucceeded,
				Messages: []*core.Message{{Role: core.RoleAssistant, Source: core.SourceReply, Content: "I am well, thank you for asking!"}},
				Now:      now,
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
