package app

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
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
	require.Contains(t, body, "parley_inbound_spooled_bytes{bot=\"default\"} 0", "the web chat's DMs go through the spool")
	require.Contains(t, body, "go_goroutines")
	require.NotContains(t, body, "DONOTLEAK", "no secret in the metrics")
	requireBotLabel(t, body)
}

// requireBotLabel checks that every series of ours but the process's
// (the database's figures) says which bot it counts.
func requireBotLabel(t *testing.T, body string) {
	t.Helper()
	processWide := []string{"parley_jobs{", "parley_queue_depth{"}
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "parley_") || slices.ContainsFunc(processWide, func(p string) bool { return strings.HasPrefix(line, p) }) {
			continue
		}
		require.Contains(t, line, `{bot="default"`, "a bot's series names the bot")
	}
}
