package slacktest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

func TestEventsAPIDeliversSignedEventsInOrder(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// Sent while nothing listens: it moves to the Events API.
	dm, ts := tb.srv.SendDM(tb.alice, "queued")
	first := tb.srv.LastEventID()

	rc := newReceiver(t, tb.srv.SigningSecret(), always(http.StatusOK))
	tb.srv.UseEventsAPI(rc.url)
	h := receive(t, rc.hits)
	require.True(t, h.verified, "slack.NewSecretsVerifier accepts the signature")
	require.Equal(t, "application/json", h.header.Get("Content-Type"))
	require.Empty(t, h.header.Get("X-Slack-Retry-Num"))
	msg, cb := messageOf(t, h.event)
	require.Equal(t, first, cb.EventID)
	require.Equal(t, "im", msg.ChannelType)
	require.Equal(t, dm, msg.Channel)
	require.Equal(t, ts, msg.TimeStamp)
	require.Equal(t, "queued", msg.Text)
	tb.srv.WaitAcked(t, first, wait)
	require.Equal(t, 1, tb.srv.Deliveries(first))

	texts := []string{"one", "two", "three"}
	for _, text := range texts {
		tb.srv.SendDM(tb.alice, text)
	}
	for _, text := range texts {
		msg, _ := messageOf(t, receive(t, rc.hits).event)
		require.Equal(t, text, msg.Text)
	}
	tb.srv.WaitAcked(t, tb.srv.LastEventID(), wait)
}

func TestEventsAPIRetriesFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithRetryDelay(5*time.Millisecond))
	rc := newReceiver(t, tb.srv.SigningSecret(), always(http.StatusInternalServerError))
	tb.srv.UseEventsAPI(rc.url)

	tb.srv.SendDM(tb.alice, "fail me")
	id := tb.srv.LastEventID()
	for n := range 4 {
		h := receive(t, rc.hits)
		require.True(t, h.verified)
		_, cb := messageOf(t, h.event)
		require.Equal(t, id, cb.EventID)
		if n == 0 {
			require.Empty(t, h.header.Get("X-Slack-Retry-Num"))
			require.Empty(t, h.header.Get("X-Slack-Retry-Reason"))
			continue
		}
		require.Equal(t, strconv.Itoa(n), h.header.Get("X-Slack-Retry-Num"))
		require.Equal(t, "http_error", h.header.Get("X-Slack-Retry-Reason"))
	}
	// The next event follows the last retry: nothing else came between.
	tb.srv.SendDM(tb.alice, "next")
	msg, _ := messageOf(t, receive(t, rc.hits).event)
	require.Equal(t, "next", msg.Text)
	require.Equal(t, 4, tb.srv.Deliveries(id))
	require.False(t, tb.srv.Acked(id))
}

func TestEventsAPIRetryThenAck(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithRetryDelay(5*time.Millisecond))
	rc := newReceiver(t, tb.srv.SigningSecret(), func(n int64, _ *http.Request) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	tb.srv.UseEventsAPI(rc.url)

	tb.srv.SendDM(tb.alice, "retry once")
	id := tb.srv.LastEventID()
	receive(t, rc.hits)
	h := receive(t, rc.hits)
	require.Equal(t, "1", h.header.Get("X-Slack-Retry-Num"))
	tb.srv.WaitAcked(t, id, wait)
	require.Equal(t, 2, tb.srv.Deliveries(id))

	tb.srv.Redeliver(id)
	h = receive(t, rc.hits)
	require.Equal(t, "2", h.header.Get("X-Slack-Retry-Num"))
	require.Equal(t, "http_timeout", h.header.Get("X-Slack-Retry-Reason"))
	_, cb := messageOf(t, h.event)
	require.Equal(t, id, cb.EventID)
	require.Eventually(t, func() bool { return tb.srv.Deliveries(id) == 3 }, wait, 5*time.Millisecond)
}

func TestEventsAPITimeout(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithRetryDelay(5*time.Millisecond))
	rc := newReceiver(t, tb.srv.SigningSecret(), func(n int64, r *http.Request) int {
		if n == 1 {
			<-r.Context().Done() // Slack gives up after 3s
		}
		return http.StatusOK
	})
	tb.srv.UseEventsAPI(rc.url)

	tb.srv.SendDM(tb.alice, "slow")
	id := tb.srv.LastEventID()
	receive(t, rc.hits)
	h := receive(t, rc.hits)
	require.Equal(t, "1", h.header.Get("X-Slack-Retry-Num"))
	require.Equal(t, "http_timeout", h.header.Get("X-Slack-Retry-Reason"))
	tb.srv.WaitAcked(t, id, wait)
}

func TestEventsAPIUnreachable(t *testing.T) {
	t.Parallel()
	tb := setup(t, slacktest.WithRetryDelay(time.Millisecond))
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	tb.srv.UseEventsAPI(gone.URL)

	tb.srv.SendDM(tb.alice, "nobody home")
	id := tb.srv.LastEventID()
	require.Eventually(t, func() bool { return tb.srv.Deliveries(id) == 4 }, wait, 5*time.Millisecond)
	require.False(t, tb.srv.Acked(id))
}

func TestVerifyURL(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	secret := tb.srv.SigningSecret()
	ctx := context.Background()
	handler := func(answer func(w http.ResponseWriter, challenge string)) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sv, err := slack.NewSecretsVerifier(r.Header, secret)
			if err != nil {
				http.Error(w, "unsigned", http.StatusUnauthorized)
				return
			}
			var body struct {
				Type      string `json:"type"`
				Challenge string `json:"challenge"`
			}
			if err := json.NewDecoder(io.TeeReader(r.Body, &sv)).Decode(&body); err != nil || sv.Ensure() != nil || body.Type != "url_verification" {
				http.Error(w, "bad request", http.StatusUnauthorized)
				return
			}
			answer(w, body.Challenge)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}

	plain := handler(func(w http.ResponseWriter, c string) { _, _ = fmt.Fprint(w, c) })
	require.NoError(t, tb.srv.VerifyURL(ctx, plain))

	asJSON := handler(func(w http.ResponseWriter, c string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": c})
	})
	require.NoError(t, tb.srv.VerifyURL(ctx, asJSON))

	wrong := handler(func(w http.ResponseWriter, _ string) { _, _ = fmt.Fprint(w, "nope") })
	require.ErrorContains(t, tb.srv.VerifyURL(ctx, wrong), "does not echo")

	failing := handler(func(w http.ResponseWriter, _ string) { w.WriteHeader(http.StatusInternalServerError) })
	require.ErrorContains(t, tb.srv.VerifyURL(ctx, failing), "status 500")
}

func TestPostEventAndSignRequest(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	rc := newReceiver(t, tb.srv.SigningSecret(), always(http.StatusOK))
	ctx := context.Background()
	body := []byte(`{"type":"event_callback","event":{"type":"message","text":"x","channel":"D1","channel_type":"im"}}`)

	status, _, err := tb.srv.PostEvent(ctx, rc.url, body, http.Header{"X-Slack-Retry-Num": {"2"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	h := receive(t, rc.hits)
	require.True(t, h.verified)
	require.Equal(t, "2", h.header.Get("X-Slack-Retry-Num"))
	require.Equal(t, body, h.body)

	// A signature already there is left alone.
	bad := http.Header{"X-Slack-Signature": {"v0=00"}, "X-Slack-Request-Timestamp": {"1"}}
	status, respBody, err := tb.srv.PostEvent(ctx, rc.url, body, bad)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, string(respBody), "bad signature")
	require.False(t, receive(t, rc.hits).verified)

	// SignRequest with another secret fails verification with ours.
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	slacktest.SignRequest(req, body, "other-secret", time.Now())
	sv, err := slack.NewSecretsVerifier(req.Header, tb.srv.SigningSecret())
	require.NoError(t, err)
	_, _ = sv.Write(body)
	require.ErrorIs(t, sv.Ensure(), slack.ErrInvalidSignature)
	sv, err = slack.NewSecretsVerifier(req.Header, "other-secret")
	require.NoError(t, err)
	_, _ = sv.Write(body)
	require.NoError(t, sv.Ensure())

	// An old timestamp is refused by slack-go, as it should be.
	slacktest.SignRequest(req, body, "other-secret", time.Now().Add(-time.Hour))
	_, err = slack.NewSecretsVerifier(req.Header, "other-secret")
	require.ErrorIs(t, err, slack.ErrExpiredTimestamp)
}
