package discord

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core/config"
)

// probe runs Probe with a deadline and checks that no answer shows the
// token.
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

// Probe asks who the bot is and where the gateway is, and connects to
// nothing.
func TestProbeChecksTheTokenAndTheGateway(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	detail, err := b.probe(t)
	require.NoError(t, err)
	require.Equal(t, "@parley-test (id 900000000000000001), gateway "+b.srv.GatewayURL()+", 999 of 1000 session starts left today", detail)
	require.Equal(t, 1, b.srv.Calls("users.me"))
	require.Equal(t, 1, b.srv.Calls("gateway.bot"))
	require.Zero(t, b.srv.Identifies(), "Probe opens no gateway session")
	require.Error(t, b.adapter.Health(), "nor starts the adapter")
}

func TestProbeRefusedToken(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.Token = config.Secret("MTIz.wrong.token") })
	_, err := b.probe(t)
	require.EqualError(t, err, "the token was refused (401 Unauthorized): fix adapters.discord.token")
}

func TestProbeNoSessionStartsLeft(t *testing.T) {
	t.Parallel()
	b := newBundleOn(t, discordtest.NewServer(t, discordtest.WithSessionStartLimit(1000, 0)))
	_, err := b.probe(t)
	require.EqualError(t, err, "the bot may open no more gateway sessions until Discord's daily limit (1000) resets in 4h0m0s: "+
		"something keeps connecting with adapters.discord.token; stop it and wait")
}

func TestProbeServerError(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	b.srv.FailNext("gateway.bot", http.StatusServiceUnavailable, 0, "upstream connect error")
	_, err := b.probe(t)
	require.EqualError(t, err, "GET /gateway/bot answered 503 Service Unavailable: upstream connect error")
}

func TestProbeUnreachableAPI(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	b := newBundle(t, func(a *Adapter) { a.APIURL = gone.URL })
	_, err := b.probe(t)
	require.ErrorContains(t, err, "cannot reach "+gone.URL+" (")
	require.ErrorContains(t, err, "): check the network (or adapters.discord.api_url)")
}
