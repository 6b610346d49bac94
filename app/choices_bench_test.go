package app

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// BenchmarkTapToAcknowledgement is issue 33's tap: parley run with the
// web chat, the model busy (every turn held at it), users tapping a
// question's button; each op is one tap, from the POST /web/taps to its
// answer with the choice made (the tap stored as the user's message, its
// turn queued behind the model). It reports the p50 and p99 of that time
// (target: p99 under 1 s with the model busy).
func BenchmarkTapToAcknowledgement(b *testing.B) {
	bb := setup(b)
	hold := make(chan struct{})
	b.Cleanup(func() { close(hold) })
	bb.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("…").WithHold(hold) })
	// One address taps for all the users: the web chat's per-address
	// and per-client limits would be the figure.
	r := bb.start(b, bb.writeConfig(b, `adapters:
  web:
    limits: {messages_per_minute_per_client: 0, messages_per_minute_per_ip: 0, new_conversations_per_hour_per_ip: 0}
`))
	st := bb.openStoreFile(b)
	ctx := context.Background()

	// Questions to tap, one per op, in conversations whose first turn
	// holds the model.
	const users = 16
	type question struct {
		client string
		data   string
	}
	qs := make([]question, 0, b.N)
	for u := range users {
		client := fmt.Sprintf("tap-bench-%04d", u)
		postMessage(b, r.addr, client, "hello")
	}
	for i := range b.N {
		client := fmt.Sprintf("tap-bench-%04d", i%users)
		var conv core.Conversation
		require.Eventually(b, func() bool {
			c, err := st.ConversationByThread(ctx, web.Platform, client)
			conv = c
			return err == nil
		}, waitFor, 5*time.Millisecond)
		m := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Content: "Tea or coffee?", Source: core.SourceReply,
			CreatedAt: time.Now().UTC(), Metadata: map[string]any{core.ChoicesKey: []string{"Tea", "Coffee"}}}
		require.NoError(b, st.AppendMessage(ctx, m))
		qs = append(qs, question{client: client, data: core.ChoiceData(m.ID, 1)})
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		got := postTap(b, r.addr, qs[i].client, "", qs[i].data)
		took = append(took, time.Since(start))
		if got.Chosen != "Coffee" {
			b.Fatalf("tap %d: %+v", i, got)
		}
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
