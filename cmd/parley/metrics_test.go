package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	conv, err := st.ConversationByThread(context.Background(), core.PlatformWeb, "client-m")
	require.NoError(t, err)
	_, err = st.ScheduleMessage(context.Background(), &core.Job{ConversationID: conv.ID, Text: "a reminder", DueAt: time.Now().Add(-time.Second)}, false, 50)
	require.NoError(t, err)
	_, err = st.ScheduleMessage(context.Background(), &core.Job{ConversationID: conv.ID, Text: "later", DueAt: time.Now().Add(time.Hour)}, false, 50)
	require.NoError(t, err)
	require.Equal(t, "a reminder", events.nextMessage(t), "the due one is sent")

	var body string
	require.Eventually(t, func() bool {
		body = scrape(t, r.addr)
		return strings.Contains(body, `parley_jobs{kind="message",status="sent"} 1`)
	}, waitFor, 20*time.Millisecond)
	require.Contains(t, body, `parley_jobs{kind="message",status="pending"} 1`)
	require.Contains(t, body, `parley_job_fire_lateness_seconds_count{kind="message"} 1`)
	require.Contains(t, body, "go_goroutines")
	require.NotContains(t, body, "DONOTLEAK", "no secret in the metrics")
}

func TestMetricsCountSendErrors(t *testing.T) {
	t.Parallel()
	m := newMetrics(fixedCounts{}, slog.New(slog.DiscardHandler))
	m.SendFailed(core.PlatformTelegram)
	m.SendFailed(core.PlatformTelegram)
	m.Fired(core.JobMessage, -time.Second) // early counts as on time
	rec := httptest.NewRecorder()
	m.handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	require.Contains(t, body, `parley_scheduled_send_errors_total{platform="telegram"} 2`)
	require.Contains(t, body, `parley_job_fire_lateness_seconds_bucket{kind="message",le="0.01"} 1`)
	require.Contains(t, body, `parley_jobs{kind="proactive",status="pending"} 3`)
}

type fixedCounts struct{}

func (fixedCounts) JobCounts(context.Context) (map[[2]string]int64, error) {
	return map[[2]string]int64{{"proactive", "pending"}: 3}, nil
}
