package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

// probe runs Probe with a deadline and checks that no answer shows a
// token.
func (b *testBundle) probe(t *testing.T) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	detail, err := b.adapter.Probe(ctx)
	for _, secret := range []string{b.srv.BotToken(), b.srv.AppToken()} {
		if err != nil {
			require.NotContains(t, err.Error(), secret)
		}
		require.NotContains(t, detail, secret)
	}
	return detail, err
}

// In socket mode Probe checks both tokens and connects to nothing.
func TestProbeSocketModeChecksBothTokens(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket)
	detail, err := b.probe(t)
	require.NoError(t, err)
	require.Equal(t, "@parley (user U0BOT00001) in Fake, socket mode (apps.connections.open ok)", detail)
	require.Equal(t, 1, b.srv.Calls("auth.test"))
	require.Equal(t, 1, b.srv.Calls("apps.connections.open"))
	require.Zero(t, b.srv.Connections(), "no websocket is opened")
	require.Error(t, b.adapter.Health(), "the adapter is not started")
}

func TestProbeEventsModeNeedsNoAppToken(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeEvents, func(a *Adapter) { a.AppToken = "" })
	detail, err := b.probe(t)
	require.NoError(t, err)
	require.Equal(t, "@parley (user U0BOT00001) in Fake, events mode", detail)
	require.Zero(t, b.srv.Calls("apps.connections.open"))
}

func TestProbeRefusedTokens(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket, func(a *Adapter) { a.BotToken = config.Secret("xoxb-wrong-0000") })
	_, err := b.probe(t)
	require.EqualError(t, err, "the bot token was refused (invalid_auth): fix adapters.slack.bot_token")

	b = newBundle(t, ModeSocket, func(a *Adapter) { a.AppToken = config.Secret("xapp-wrong-0000") })
	_, err = b.probe(t)
	require.EqualError(t, err, "the app token was refused by apps.connections.open (invalid_auth): fix adapters.slack.app_token "+
		"(an xapp- token with connections:write, and Socket Mode on in the app's settings)")

	b = newBundle(t, ModeSocket)
	b.srv.RevokeTokens()
	_, err = b.probe(t)
	require.EqualError(t, err, "the bot token was refused (token_revoked): fix adapters.slack.bot_token")
}

func TestProbeOtherErrors(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket)
	b.srv.FailNext("apps.connections.open", "internal_error")
	_, err := b.probe(t)
	require.EqualError(t, err, "apps.connections.open answered internal_error")

	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	b = newBundle(t, ModeSocket, func(a *Adapter) { a.APIURL = gone.URL + "/api/" })
	_, err = b.probe(t)
	require.ErrorContains(t, err, "cannot reach "+gone.URL+"/api/ (")
	require.ErrorContains(t, err, "): check the network (or adapters.slack.api_url)")
}
