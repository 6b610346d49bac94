package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

const webhookSecret = "hook_Secret-123"

// webhookBundle is a webhook-mode adapter mounted on an httptest server.
type webhookBundle struct {
	*testBundle
	http *httptest.Server
}

func setupWebhook(t *testing.T, configure ...func(*Adapter)) *webhookBundle {
	t.Helper()
	b := newBundle(t, append([]func(*Adapter){func(a *Adapter) {
		a.Mode = ModeWebhook
		a.WebhookSecret = webhookSecret
	}}, configure...)...)
	mux := http.NewServeMux()
	b.adapter.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &webhookBundle{testBundle: b, http: srv}
}

// post sends an update to the webhook with the given secret header ("" for
// none) and returns the status.
func (b *webhookBundle) post(t *testing.T, secret string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.http.URL+WebhookPath, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	}
	resp, err := b.http.Client().Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// privateUpdate is a DM from Ada as Telegram would post it.
func privateUpdate(t *testing.T, id int, text string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"update_id": id,
		"message": map[string]any{
			"message_id": id, "date": 1700000000, "text": text,
			"chat": map[string]any{"id": ada.ID, "type": "private"},
			"from": map[string]any{"id": ada.ID, "is_bot": false, "first_name": "Ada"},
		},
	})
	require.NoError(t, err)
	return body
}

func TestWebhookChecksSecret(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.start(t)
	require.Zero(t, b.srv.Calls("getUpdates"), "no polling in webhook mode")
	require.Zero(t, b.srv.Calls("deleteWebhook"))
	require.Zero(t, b.srv.Calls("setWebhook"), "no webhook_url: the owner registered it")
	require.NoError(t, b.adapter.Health())

	require.Equal(t, http.StatusUnauthorized, b.post(t, "", privateUpdate(t, 1, "no secret")))
	require.Equal(t, http.StatusUnauthorized, b.post(t, "wrong", privateUpdate(t, 2, "wrong secret")))
	require.Equal(t, http.StatusUnauthorized, b.post(t, webhookSecret+"x", privateUpdate(t, 3, "longer secret")))
	require.Equal(t, http.StatusOK, b.post(t, webhookSecret, privateUpdate(t, 4, "good secret")))

	got := b.core.Messages()
	require.Len(t, got, 1, "only the update with the right secret is processed")
	require.Equal(t, "good secret", got[0].Text)
	require.Equal(t, "100001", got[0].ChannelThreadID)
	require.True(t, got[0].Direct)
}

func TestWebhookIgnoresAndRejects(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.start(t)
	group := []byte(`{"update_id": 5, "message": {"message_id": 1, "date": 1700000000,
		"chat": {"id": -100, "type": "group"}, "from": {"id": 100001, "first_name": "Ada"}, "text": "hi group"}}`)
	require.Equal(t, http.StatusOK, b.post(t, webhookSecret, group))
	require.Equal(t, http.StatusOK, b.post(t, webhookSecret, []byte(`{"update_id": 6, "message": "garbage"}`)),
		"an authentic update the adapter cannot read is acknowledged, or Telegram would resend it forever")
	require.Equal(t, http.StatusBadRequest, b.post(t, webhookSecret, []byte(`not json`)))
	require.Empty(t, b.core.Messages())

	// The core failing makes Telegram retry: the update is not lost.
	b.core.FailWith(errors.New("database is locked"))
	require.Equal(t, http.StatusInternalServerError, b.post(t, webhookSecret, privateUpdate(t, 7, "retry me")))
}

func TestWebhookBeforeStartAndAfterStop(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	require.Equal(t, http.StatusServiceUnavailable, b.post(t, webhookSecret, privateUpdate(t, 1, "too early")))
	b.start(t)
	require.NoError(t, b.adapter.Stop(context.Background()))
	require.Equal(t, http.StatusServiceUnavailable, b.post(t, webhookSecret, privateUpdate(t, 2, "too late")))
	require.Empty(t, b.core.Messages())
}

func TestWebhookNotMountedWhenPolling(t *testing.T) {
	t.Parallel()
	a := New()
	mux := http.NewServeMux()
	a.Mount(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, WebhookPath, nil))
	require.Equal(t, http.StatusNotFound, rec.Code)
}

func TestWebhookURLIsRegistered(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	// The fake posts to plain http; Validate (already run) insists on https
	// for the real Telegram.
	b.adapter.WebhookURL = b.http.URL + WebhookPath
	b.start(t)

	url, secret := b.srv.Webhook()
	require.Equal(t, b.http.URL+WebhookPath, url)
	require.Equal(t, webhookSecret, secret)

	// End to end: the fake posts the update to the adapter's handler.
	b.srv.SendPrivate(ada, "through the webhook")
	got := b.core.Wait(t, 1, waitFor)
	require.Equal(t, "through the webhook", got[0].Text)
	require.Equal(t, "Ada Lovelace", got[0].DisplayName)
}

func TestWebhookSecretNeverPrinted(t *testing.T) {
	t.Parallel()
	a := New()
	a.WebhookSecret = config.Secret(webhookSecret)
	a.Token = "123:tok"
	require.NotContains(t, fmtAll(a), webhookSecret)
	require.NotContains(t, fmtAll(a), "123:tok")
}

func TestWebhookRejectsHugeBody(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	b.start(t)
	huge := privateUpdate(t, 1, string(bytes.Repeat([]byte("a"), maxWebhookBody)))
	require.Equal(t, http.StatusRequestEntityTooLarge, b.post(t, webhookSecret, huge))
	require.Empty(t, b.core.Messages())
}
