package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// sessionPolicy sets the session limits, and counts how often its layer
// is rendered.
type sessionPolicy struct {
	limits   core.SessionLimits
	rendered *atomic.Int32
}

func (p sessionPolicy) Name() string                      { return "testmemory" }
func (p sessionPolicy) SessionLimits() core.SessionLimits { return p.limits }
func (p sessionPolicy) PromptLayers(_ context.Context, t *core.Turn) ([]core.PromptLayer, error) {
	n := p.rendered.Add(1)
	return []core.PromptLayer{{Level: core.LayerFacts, Name: "facts", Text: fmt.Sprintf("render %d at %s", n, t.Now.Format(time.RFC3339Nano))}}, nil
}

func TestWindowDropsTheOldestWhileTheStackStays(t *testing.T) {
	t.Parallel()
	var rendered atomic.Int32
	policy := sessionPolicy{limits: core.SessionLimits{Gap: time.Hour, WindowMessages: 4, WindowTokens: 60}, rendered: &rendered}
	b := setup(t, setupOpts{plugins: []core.Plugin{policy}})
	var system string
	for i := 1; i <= 4; i++ {
		b.model.Enqueue(llmtest.Text(fmt.Sprintf("answer %d", i)))
		require.NoError(t, b.adapter.Deliver(b.ctx, "win", fmt.Sprintf("message %d", i)))
		b.adapter.WaitSent(t, i, waitFor)
		b.waitRun(t, "win")
		req := b.model.Requests()[i-1]
		if i == 1 {
			system = req.Messages()[0].Content
		}
		require.Equal(t, system, req.Messages()[0].Content, "L0–L4 stay fixed for the record")
	}
	require.EqualValues(t, 1, rendered.Load(), "the stack is built once per record")
	require.Contains(t, system, "You are Testy.")
	var got []string
	for _, m := range b.model.Requests()[3].Messages()[1:] {
		got = append(got, m.Role+":"+m.Content)
	}
	require.Equal(t, []string{"user:message 3", "assistant:answer 3", "user:message 4"}, got[len(got)-3:])
	require.Len(t, got, 4, "window_messages keeps the newest 4")

	// A long message: the token budget keeps only what fits, newest first.
	b.model.Enqueue(llmtest.Text("ok"))
	long := strings.Repeat("word ", 200) // ~250 tokens, over the budget alone
	require.NoError(t, b.adapter.Deliver(b.ctx, "win", long))
	b.adapter.WaitSent(t, 5, waitFor)
	msgs := b.model.Requests()[4].Messages()
	require.Len(t, msgs, 2, "the newest message is kept even over the budget, and nothing older")
	require.Equal(t, strings.TrimSpace(long), strings.TrimSpace(msgs[1].Content))
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	require.Equal(t, 4, core.EstimateTokens(""))
	require.Equal(t, 4+3, core.EstimateTokens("hello world"), "about four ASCII characters a token")
	require.Equal(t, 4+6, core.EstimateTokens("你好，世界！"), "a token a CJK character")
}
