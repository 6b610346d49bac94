package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// scrape GETs /metrics from addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func TestMetricsCountJobsAndLateness(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	b.model.Enqueue(llmtest.Text("hello"))
	events := openEvents(t, r.addr, "client-m")
	postMessage(t, r.addr, "client-m", "hi")
	require.Equal(t, "hello", events.nextMessage(t))

	st := b.openStoreFile(t)
	conv, err := st.ConversationByThread(context.Background(), web.Platform, "client-m")
	require.NoError(t, err)
	_, err = st.ScheduleMessage(context.Background(), &core.Job{ConversationID: conv.ID, Text: "a reminder", DueAt: time.Now().Add(-time.Second)}, false, 50)
	require.NoError(t, err)
	_, err = st.ScheduleMessage(context.Background(), &core.Job{ConversationID: conv.ID, Text: "later", DueAt: time.Now().Add(time.Hour)}, false, 50)
	require.NoError(t, err)
	require.Equal(t, "a reminder", events.nextMessage(t), "the due one is sent")

	var body string
	require.Eventually(t, func() bool {
		body = scrape(t, r.addr)
		// The lateness is observed just after the job is marked sent.
		return strings.Contains(body, `parley_jobs{kind="message",status="sent"} 1`) &&
			strings.Contains(body, `parley_job_fire_lateness_seconds_count{bot="default",kind="message"} 1`)
	}, waitFor, 20*time.Millisecond)
	require.Contains(t, body, `parley_jobs{kind="message",status="pending"} 1`)
	require.Contains(t, body, `parley_job_fire_lateness_seconds_count{bot="default",kind="message"} 1`)
	require.Contains(t, body, `parley_turns_total{bot="default",kind="user_turn",status="succeeded"} 1`)
	require.Contains(t, body, `parley_turn_duration_seconds_count{bot="default",kind="user_turn"} 1`)
	require.Contains(t, body, `parley_llm_request_duration_seconds_count{bot="default",result="ok"} 1`)
	require.Contains(t, body, `parley_llm_tokens_total{bot="default",type="prompt"} 10`, "llmtest reports 10 prompt tokens a call")
	require.Contains(t, body, `parley_llm_tokens_total{bot="default",type="completion"} 5`)
	require.Contains(t, body, `parley_sends_total{bot="default",platform="web",result="ok"} 2`, "the reply and the reminder")
	require.Contains(t, body, `parley_queue_depth{queue="runs_queued"} 0`)
	require.Contains(t, body, `parley_queue_depth{queue="jobs_due"} 0`)
	require.Contains(t, body, "go_goroutines")
	require.NotContains(t, body, "DONOTLEAK", "no secret in the metrics")
	requireBotLabel(t, body)
}

// requireBotLabel checks that every series of ours but the process's
// (the database's figures, the spool) says which bot it counts.
func requireBotLabel(t *testing.T, body string) {
	t.Helper()
	processWide := []string{"parley_jobs{", "parley_queue_depth{", "parley_inbound_spooled_bytes "}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "parley_") || slices.ContainsFunc(processWide, func(p string) bool { return strings.HasPrefix(line, p) }) {
			continue
		}
		require.Contains(t, line, `{bot="default",`, "a bot's series names the bot")
	}
}

func TestMetricsCountSendErrors(t *testing.T) {
	t.Parallel()
	all := newMetrics(slog.New(slog.DiscardHandler))
	all.watchStore(fixedCounts{})
	m, other := all.forBot("ada"), all.forBot("grace")
	m.SendFailed(telegram.Platform)
	m.SendFailed(telegram.Platform)
	m.Fired(core.JobMessage, -time.Second) // early counts as on time
	m.Sent(slack.Platform, "permanent")
	m.TurnFinished(core.RunCronTurn, core.RunFailed, 3*time.Second)
	m.ModelCalled(2*time.Second, llm.Usage{PromptTokens: 100, CompletionTokens: 7}, errors.New("timeout"))
	m.Finished("m", "stop")
	m.Finished("m", "made_up")
	m.Limited(core.LimitTurnsPerDay)
	m.MCPCalled("tools", "echo", "ok", time.Second)
	other.TurnFinished(core.RunUserTurn, core.RunSucceeded, time.Second)
	other.ModelCalled(time.Second, llm.Usage{PromptTokens: 1}, nil)
	rec := httptest.NewRecorder()
	all.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
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
