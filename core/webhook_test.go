package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// The default bot keeps the documented paths; another bot's go under
// its id, so several bots share one HTTP server.
func TestWebhookPath(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/webhooks/telegram", core.WebhookPath("default", "/webhooks/telegram"))
	require.Equal(t, "/webhooks/telegram", core.WebhookPath("", "/webhooks/telegram"))
	require.Equal(t, "/webhooks/ada/telegram", core.WebhookPath("ada", "/webhooks/telegram"))
	require.Equal(t, "/webhooks/ada/slack/events", core.WebhookPath("ada", "/webhooks/slack/events"))
}
