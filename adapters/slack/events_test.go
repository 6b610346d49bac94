package slack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// dmCallback is a signed-able event_callback with a DM from ada.
func dmCallback(eventID, text string) []byte {
	ts := fmt.Sprintf("%d.000100", time.Now().Unix())
	body, _ := json.Marshal(map[string]any{
		"token": "verification-token", "team_id": "T0FAKE0001", "api_app_id": "A0FAKE0001",
		"type": "event_callback", "event_id": eventID, "event_time": time.Now().Unix(),
		"event": map[string]any{
			"type": "message", "channel": "D0ADA00001", "user": ada.ID, "text": text,
			"ts": ts, "event_ts": ts, "channel_type": "im",
		},
	})
	return body
}

func TestEventsSignatureIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	url := b.events.URL + EventsPath
	now := time.Now()
	for _, tc := range []struct {
		name string
		sign func(r *http.Request, body []byte)
	}{
		{"unsigned", func(*http.Request, []byte) {}},
		{"wrong secret", func(r *http.Request, body []byte) { slacktest.SignRequest(r, body, "not-the-secret", now) }},
		{"too old", func(r *http.Request, body []byte) {
			slacktest.SignRequest(r, body, b.srv.SigningSecret(), now.Add(-6*time.Minute))
		}},
		{"from the future", func(r *http.Request, body []byte) {
			slacktest.SignRequest(r, body, b.srv.SigningSecret(), now.Add(6*time.Minute))
		}},
		{"body changed", func(r *http.Request, body []byte) {
			slacktest.SignRequest(r, append([]byte(nil), body[:len(body)-2]...), b.srv.SigningSecret(), now)
		}},
	} {
		body := dmCallback("Ev0BAD"+tc.name, "forged")
		req := httptest.NewRequest(http.MethodPost, url, nil)
		tc.sign(req, body)
		// postRaw, since PostEvent would sign what has no signature.
		require.Equal(t, http.StatusUnauthorized, postRaw(t, url, body, req.Header.Clone()), tc.name)
	}
	requireOnlySentinel(t, b, "a forged event")
	require.NotContains(t, b.logs.String(), b.srv.SigningSecret())
}

// postRaw POSTs body with exactly header and returns the status.
func postRaw(t *testing.T, url string, body []byte, header http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytesReader(body))
	require.NoError(t, err)
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

func TestEventsURLVerification(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	ctx, cancel := contextWithTimeout()
	defer cancel()
	require.NoError(t, b.srv.VerifyURL(ctx, b.events.URL+EventsPath))
}

func TestEventsRetryHeaderIsHandledOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	url := b.events.URL + EventsPath
	body := dmCallback("Ev0RETRY01", "said once")
	ctx, cancel := contextWithTimeout()
	defer cancel()
	status, _, err := b.srv.PostEvent(ctx, url, body, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	for i := 1; i <= 3; i++ {
		h := http.Header{}
		h.Set("X-Slack-Retry-Num", fmt.Sprint(i))
		h.Set("X-Slack-Retry-Reason", "http_timeout")
		status, _, err := b.srv.PostEvent(ctx, url, body, h)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, status, "a retry of a handled event is acked")
	}
	requireOnlySentinelAfter(t, b, 1, "a retried event")
	require.Equal(t, "said once", b.core.Messages()[0].Text)
}

func TestEventsBeforeStartAreRefused(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeEvents)
	url := b.events.URL + EventsPath
	ctx, cancel := contextWithTimeout()
	defer cancel()
	status, _, err := b.srv.PostEvent(ctx, url, dmCallback("Ev0EARLY01", "too early"), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, status, "slack keeps it and retries")
	require.Empty(t, b.core.Messages())
}

func TestSocketModeMountsNothing(t *testing.T) {
	t.Parallel()
	a := New()
	mux := http.NewServeMux()
	a.Mount(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, EventsPath, nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

func TestEventsBodyTooLarge(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	big := make([]byte, maxEventBody+1)
	for i := range big {
		big[i] = 'a'
	}
	require.Equal(t, http.StatusRequestEntityTooLarge, postRaw(t, b.events.URL+EventsPath, big, http.Header{}))
}
