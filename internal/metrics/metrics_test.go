package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/internal/metrics"
)

func TestBotsCountApart(t *testing.T) {
	t.Parallel()
	all := metrics.New(slog.New(slog.DiscardHandler))
	all.WatchStore(fixedCounts{})
	m, other := all.ForBot("ada"), all.ForBot("grace")
	m.SendFailed(core.Platform("telegram"))
	m.SendFailed(core.Platform("telegram"))
	m.Fired(core.JobMessage, -time.Second) // early counts as on time
	m.Sent(core.Platform("slack"), "permanent")
	m.TurnFinished(core.RunCronTurn, core.RunFailed, 3*time.Second)
	m.ModelCalled(2*time.Second, llm.Usage{PromptTokens: 100, CompletionTokens: 7}, errors.New("timeout"))
	m.Finished("m", "stop")
	m.Finished("m", "made_up")
	m.Limited(core.LimitTurnsPerDay)
	m.MCPCalled("tools", "echo", "ok", time.Second)
	other.TurnFinished(core.RunUserTurn, core.RunSucceeded, time.Second)
	other.ModelCalled(time.Second, llm.Usage{PromptTokens: 1}, nil)
	rec := httptest.NewRecorder()
	all.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	require.Contains(t, body, `parley_scheduled_send_errors_total{bot="ada",platform="telegram"} 2`)
	require.Contains(t, body, `parley_job_fire_lateness_seconds_bucket{bot="ada",kind="message",le="0.01"} 1`)
	require.Contains(t, body, `parley_sends_total{bot="ada",platform="slack",result="permanent"} 1`)
	require.Contains(t, body, `parley_turns_total{bot="ada",kind="cron_turn",status="failed"} 1`)
	require.Contains(t, body, `parley_turn_duration_seconds_bucket{bot="ada",kind="cron_turn",le="2.5"} 0`)
	require.Contains(t, body, `parley_turn_duration_seconds_bucket{bot="ada",kind="cron_turn",le="5"} 1`)
	require.Contains(t, body, `parley_llm_request_duration_seconds_count{bot="ada",result="error"} 1`)
	require.Contains(t, body, `parley_llm_tokens_total{bot="ada",type="prompt"} 100`)
	require.Contains(t, body, `parley_llm_finish_total{bot="ada",reason="stop"} 1`)
	require.Contains(t, body, `parley_llm_finish_total{bot="ada",reason="other"} 1`, "a reason the server made up")
	require.Contains(t, body, `parley_limited_messages_total{bot="ada",limit="turns_per_day"} 1`)
	require.Contains(t, body, `parley_mcp_tool_calls_total{bot="ada",outcome="ok",server="tools",tool="echo"} 1`)
	// Each bot has its own series; the database's figures are the process's.
	require.Contains(t, body, `parley_turns_total{bot="grace",kind="user_turn",status="succeeded"} 1`)
	require.Contains(t, body, `parley_llm_tokens_total{bot="grace",type="prompt"} 1`)
	require.Contains(t, body, `parley_llm_request_duration_seconds_count{bot="grace",result="error"} 0`)
	require.Contains(t, body, `parley_limited_messages_total{bot="grace",limit="turns_per_day"} 0`)
	require.NotContains(t, body, `parley_turns_total{bot="grace",kind="cron_turn"`)
	require.Contains(t, body, `parley_jobs{kind="proactive",status="pending"} 3`)
	require.Contains(t, body, `parley_queue_depth{queue="runs_queued"} 4`)
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok && !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
			require.True(t, strings.HasPrefix(name, "parley_"), "every metric of ours is parley_: %s", line)
		}
	}
}

type fixedCounts struct{}

func (fixedCounts) JobCounts(context.Context) (map[[2]string]int64, error) {
	return map[[2]string]int64{{"proactive", "pending"}: 3}, nil
}

func (fixedCounts) QueueDepth(context.Context, time.Time) (map[string]int64, error) {
	return map[string]int64{"runs_queued": 4, "runs_running": 1, "jobs_due": 0}, nil
}

// BenchmarkTurnMetrics is what one turn with one model call and one reply
// costs in metrics, the hot path the bot label must not slow.
func BenchmarkTurnMetrics(b *testing.B) {
	m := metrics.New(slog.New(slog.DiscardHandler)).ForBot("default")
	usage := llm.Usage{PromptTokens: 10, CompletionTokens: 5}
	b.ReportAllocs()
	for b.Loop() {
		m.ModelCalled(time.Second, usage, nil)
		m.Finished("m", "stop")
		m.Sent(core.Platform("web"), "ok")
		m.TurnFinished(core.RunUserTurn, core.RunSucceeded, 2*time.Second)
	}
}
