package app

import (
	"log/slog"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// BenchmarkTurnMetrics is what one turn with one model call and one reply
// costs in metrics, the hot path the bot label must not slow.
func BenchmarkTurnMetrics(b *testing.B) {
	m := newMetrics(slog.New(slog.DiscardHandler)).forBot(defaultBotID)
	usage := llm.Usage{PromptTokens: 10, CompletionTokens: 5}
	b.ReportAllocs()
	for b.Loop() {
		m.ModelCalled(time.Second, usage, nil)
		m.Finished("m", "stop")
		m.Sent(web.Platform, "ok")
		m.TurnFinished(core.RunUserTurn, core.RunSucceeded, 2*time.Second)
	}
}
