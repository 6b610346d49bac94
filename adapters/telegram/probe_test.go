package telegram

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/config"
)

// probe runs Probe with a deadline.
func (b *testBundle) probe(t *testing.T) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	detail, err := b.adapter.Probe(ctx)
	if err != nil {
		require.NotContains(t, err.Error(), b.srv.Token())
	}
	require.NotContains(t, detail, b.srv.Token())
	return detail, err
}

// Probe asks getMe and nothing that would change the bot's state.
func TestProbeChecksTheTokenAndChangesNothing(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	detail, err := b.probe(t)
	require.NoError(t, err)
	require.Equal(t, "@parley_test_bot (id 999000), polling", detail)
	require.Equal(t, 1, b.srv.Calls("getMe"))
	for _, m := range []string{"getUpdates", "deleteWebhook", "setWebhook", "setMyCommands", "deleteMyCommands"} {
		require.Zero(t, b.srv.Calls(m), "Probe called %s", m)
	}
}

func TestProbeRefusedToken(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.Token = config.Secret("123456:REVOKED-token-xyz") })
	_, err := b.probe(t)
	require.EqualError(t, err, "the token was refused (401 Unauthorized): fix adapters.telegram.token")
}

func TestProbeUnreachableAPI(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	b := newBundle(t, func(a *Adapter) { a.APIURL = gone.URL })
	_, err := b.probe(t)
	require.ErrorContains(t, err, "cannot reach "+gone.URL+" (")
	require.ErrorContains(t, err, "): check the network (or adapters.telegram.api_url)")
}

// In webhook mode Probe says whether Telegram has a webhook to post to.
func TestProbeWebhookMode(t *testing.T) {
	t.Parallel()
	webhook := func(a *Adapter) { a.Mode, a.WebhookSecret = ModeWebhook, "s3cret" }

	b := newBundle(t, webhook)
	_, err := b.probe(t)
	require.EqualError(t, err, "no webhook is registered with Telegram and adapters.telegram.webhook_url is empty, "+
		"so no update would arrive: set adapters.telegram.webhook_url (or register the webhook yourself)")

	// The owner registered it themselves.
	resp, err := http.PostForm(b.srv.URL()+"/bot"+b.srv.Token()+"/setWebhook", url.Values{"url": {"https://bot.example/webhooks/telegram"}})
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	detail, err := b.probe(t)
	require.NoError(t, err)
	require.Equal(t, "@parley_test_bot (id 999000), webhook registered", detail)

	b = newBundle(t, webhook, func(a *Adapter) { a.WebhookURL = "https://bot.example/hook" })
	detail, err = b.probe(t)
	require.NoError(t, err)
	require.Equal(t, "@parley_test_bot (id 999000), webhook: parley run registers webhook_url (Telegram has another URL or none now)", detail)
	require.Zero(t, b.srv.Calls("setWebhook"), "Probe registers nothing")
}

func TestProbeNeedsNoStartAndLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	srv := telegramtest.NewServer(t)
	a := New()
	a.Token, a.APIURL = config.Secret(srv.Token()), srv.URL()
	require.NoError(t, a.Validate())
	_, err := a.Probe(context.Background())
	require.NoError(t, err)
	require.Error(t, a.Health(), "probing does not start the adapter")
}
