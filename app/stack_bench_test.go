package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/app/modules"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
)

// BenchmarkPromptStack builds a record's whole prompt stack from scratch,
// as at a session's first turn: every plugin's layers (persona, the
// instructions, the session's metadata and initial mood, 30 facts, 10
// summaries) read from a SQLite file, put in order and joined, and the
// 50-message window turned into the model's messages. It reports the p50
// and p99 time of one build.
func BenchmarkPromptStack(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(b.TempDir(), "stack.db")})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	require.NoError(b, st.Migrate(ctx, pluginMigrators()...))
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	var conv core.Conversation
	// Eleven earlier sessions with summaries, then the current one.
	for r := range 11 {
		at := t0.AddDate(0, 0, r-11)
		res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: telegram.Platform, ChannelThreadID: "ada",
			DisplayName: "Ada", Text: "hello", Now: at, SessionGap: 10 * time.Minute})
		require.NoError(b, err)
		require.NoError(b, st.SaveSummary(ctx, *res.Conversation.CurrentRecordID,
			fmt.Sprintf("Session %d: Ada talked about her garden, her cat Miso and the week ahead at the library.", r)))
		conv = res.Conversation
	}
	for i := range 30 {
		_, _, err := memory.NewFactStore(st.Database()).Remember(ctx, conv.ID, fmt.Sprintf("Fact number %d about Ada, a sentence of about this length.", i), 30, t0)
		require.NoError(b, err)
	}
	var history []core.Message
	for i := range 25 {
		res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: telegram.Platform, ChannelThreadID: "ada",
			Text: fmt.Sprintf("message %d from Ada, with a few words in it", i), Now: t0.Add(time.Duration(i) * time.Minute), SessionGap: 10 * time.Minute})
		require.NoError(b, err)
		reply := core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Content: fmt.Sprintf("answer %d to Ada, also a few words long", i), Source: core.SourceReply}
		require.NoError(b, st.AppendMessage(ctx, &reply))
		history = append(history, res.Message, reply)
		conv = res.Conversation
	}
	path := filepath.Join(b.TempDir(), "config.yaml")
	require.NoError(b, os.WriteFile(path, []byte("plugins:\n  persona: {name: Subaru}\n"), 0o600))
	loaded, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(b, err)
	decoded, err := modules.DecodePlugins(loaded)
	require.NoError(b, err)
	plugins, err := modules.ProvisionPlugins(ctx, loaded, decoded, core.Env{Store: st, Database: st.Database(), Clock: core.SystemClock{}, Location: time.UTC})
	require.NoError(b, err)
	rec, err := st.SessionRecord(ctx, *conv.CurrentRecordID)
	require.NoError(b, err)
	turn := &core.Turn{Conversation: conv, Record: rec, History: history, Now: t0.Add(30 * time.Minute), Location: time.UTC}

	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		layers, err := core.StackLayers(ctx, plugins, turn)
		if err != nil {
			b.Fatal(err)
		}
		msgs := make([]llm.Message, 0, len(history)+1)
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: core.SystemPrompt(layers)})
		for _, m := range turn.History {
			msgs = append(msgs, llm.Message{Role: string(m.Role), Content: m.Content})
		}
		lat = append(lat, time.Since(start))
		if len(msgs) != 51 {
			b.Fatalf("%d messages", len(msgs))
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e6 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
