package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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
			strings.Contains(body, `parley_job_fire_lateness_seconds_count{kind="message"} 1`)
	}, waitFor, 20*time.Millisecond)
	require.Contains(t, body, `parley_jobs{kind="message",status="pending"} 1`)
	require.Contains(t, body, `parley_job_fire_lateness_seconds_count{kind="message"} 1`)
	require.Contains(t, body, `parley_turns_total{kind="user_turn",status="succeeded"} 1`)
	require.Contains(t, body, `parley_turn_duration_seconds_count{kind="user_turn"} 1`)
	require.Contains(t, body, `parley_llm_request_duration_seconds_count{result="ok"} 1`)
	require.Contains(t, body, `parley_llm_tokens_total{type="prompt"} 10`, "llmtest reports 10 prompt tokens a call")
	require.Contains(t, body, `parley_llm_tokens_total{type="completion"} 5`)
	require.Contains(t, body, `parley_sends_total{platform="web",result="ok"} 2`, "the reply and the reminder")
	require.Contains(t, body, `parley_queue_depth{queue="runs_queued"} 0`)
	require.Contains(t, body, `parley_queue_depth{queue="jobs_due"} 0`)
	require.Contains(t, body, "go_goroutines")
	require.NotContains(t, body, "DONOTLEAK", "no secret in the metrics")
}

func TestMetricsCountSendErrors(t *testing.T) {
	t.Parallel()
	m := newMetrics(slog.New(slog.DiscardHandler))
	m.watchStore(fixedCounts{})
	m.SendFailed(telegram.Platform)
	m.SendFailed(telegram.Platform)
	m.Fired(core.JobMessage, -time.Second) // early counts as on time
	m.Sent(slack.Platform, "permanent")
	m.TurnFinished(core.RunCronTurn, core.RunFailed, 3*time.Second)
	m.ModelCalled(2*time.Second, llm.Usage{PromptTokens: 100, CompletionTokens: 7}, errors.New("timeout"))
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	require.Contains(t, body, `parley_scheduled_send_errors_total{platform="telegram"} 2`)
	require.Contains(t, body, `parley_job_fire_lateness_seconds_bucket{kind="message",le="0.01"} 1`)
	require.Contains(t, body, `parley_jobs{kind="proactive",status="pending"} 3`)
	require.Contains(t, body, `parley_sends_total{platform="slack",result="permanent"} 1`)
	require.Contains(t, body, `parley_turns_total{kind="cron_turn",status="failed"} 1`)
	require.Contains(t, body, `parley_turn_duration_seconds_bucket{kind="cron_turn",le="2.5"} 0`)
	require.Contains(t, body, `parley_turn_duration_seconds_bucket{kind="cron_turn",le="5"} 1`)
	require.Contains(t, body, `parley_llm_request_duration_seconds_count{result="error"} 1`)
	require.Contains(t, body, `parley_llm_tokens_total{type="prompt"} 100`)
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
