package telegram

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

func TestRegistered(t *testing.T) {
	t.Parallel()
	info, ok := core.Adapters().Lookup("telegram")
	require.True(t, ok)
	require.False(t, info.EnabledByDefault, "telegram is off unless the config turns it on")
	a := info.New()
	require.Equal(t, "telegram", a.Name())
	require.Equal(t, Platform, a.Platform())
	require.Equal(t, "Telegram", core.PlatformTitle(a), "the model hears the platform named as before")
	require.Equal(t, core.Capabilities{MaxMessageLength: 4096, Markup: "markdownv2", Typing: true, RichText: true, Redelivers: true, Choices: true}, a.Capabilities())
	_, typing := a.(core.TypingIndicator)
	require.True(t, typing)
	_, images := a.(core.ImageSender)
	require.True(t, images)
}

func TestConfigDecodes(t *testing.T) {
	t.Parallel()
	var node yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(`
token: "123:abc"
api_url: http://127.0.0.1:8081
mode: webhook
webhook_secret: s3cret_-
webhook_url: https://bot.example.com/webhooks/telegram
format: plain
poll_timeout: 45s
`), &node))
	a := New()
	require.NoError(t, config.Section{Node: node.Content[0], Path: "adapters.telegram"}.Decode(a))
	require.Equal(t, config.Secret("123:abc"), a.Token)
	require.Equal(t, "http://127.0.0.1:8081", a.APIURL)
	require.Equal(t, ModeWebhook, a.Mode)
	require.Equal(t, config.Secret("s3cret_-"), a.WebhookSecret)
	require.Equal(t, "https://bot.example.com/webhooks/telegram", a.WebhookURL)
	require.Equal(t, FormatPlain, a.Format)
	require.Equal(t, 45*time.Second, a.PollTimeout)
	require.NoError(t, a.Validate())
	require.Equal(t, "plain", a.Capabilities().Markup)
	require.False(t, a.Capabilities().RichText, "format plain: the core sends plain text")

	// The old name of markdown is still read.
	old := New()
	old.Token, old.Format = "123:abc", FormatMarkdownV2
	require.NoError(t, old.Validate())
	require.Equal(t, New().Capabilities(), old.Capabilities())

	// Defaults.
	d := New()
	require.Equal(t, ModePolling, d.Mode)
	require.Equal(t, FormatMarkdown, d.Format)
	require.Equal(t, core.Capabilities{MaxMessageLength: 4096, Markup: "markdownv2", Typing: true, RichText: true, Redelivers: true, Choices: true}, d.Capabilities())
	require.Equal(t, 30*time.Second, d.PollTimeout)
	require.Empty(t, d.APIURL)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	const token = "123456:SECRET-token"
	valid := func() *Adapter {
		a := New()
		a.Token = token
		return a
	}
	require.NoError(t, valid().Validate())

	for _, tc := range []struct {
		name   string
		change func(a *Adapter)
		want   string
	}{
		{"no token", func(a *Adapter) { a.Token = "" }, "telegram adapter: token is required"},
		{"blank token", func(a *Adapter) { a.Token = "  " }, "telegram adapter: token is required"},
		{"token with a slash", func(a *Adapter) { a.Token = "123/../x" }, "telegram adapter: token must not contain"},
		{"bad mode", func(a *Adapter) { a.Mode = "x" }, `telegram adapter: mode must be polling or webhook, got "x"`},
		{"bad api_url", func(a *Adapter) { a.APIURL = "api.telegram.org" }, `telegram adapter: api_url must be an http or https URL, got "api.telegram.org"`},
		{"webhook without secret", func(a *Adapter) { a.Mode = ModeWebhook }, "telegram adapter: webhook_secret is required in webhook mode"},
		{"bad secret", func(a *Adapter) { a.Mode = ModeWebhook; a.WebhookSecret = "no spaces allowed" }, "telegram adapter: webhook_secret must be 1-256 characters of A-Z, a-z, 0-9, _ and -"},
		{"long secret", func(a *Adapter) { a.Mode = ModeWebhook; a.WebhookSecret = config.Secret(strings.Repeat("a", 257)) }, "telegram adapter: webhook_secret must be 1-256"},
		{"http webhook_url", func(a *Adapter) {
			a.Mode, a.WebhookSecret, a.WebhookURL = ModeWebhook, "s", "http://bot.example.com/webhooks/telegram"
		}, `telegram adapter: webhook_url must be an https URL (Telegram only posts to https), got "http://bot.example.com/webhooks/telegram"`},
		{"webhook_url while polling", func(a *Adapter) { a.WebhookURL = "https://bot.example.com/x" }, `telegram adapter: webhook_url is set but mode is "polling"`},
		{"bad format", func(a *Adapter) { a.Format = "html" }, `telegram adapter: format must be markdown or plain (markdownv2 is read as markdown), got "html"`},
		{"short poll timeout", func(a *Adapter) { a.PollTimeout = 0 }, "telegram adapter: poll_timeout must be between 1s and 10m, got 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := valid()
			tc.change(a)
			err := a.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "SECRET", "a secret in the message")
		})
	}
	// Problems are reported together.
	a := New()
	a.Mode, a.Format = "x", "y"
	err := a.Validate()
	require.ErrorContains(t, err, "token is required")
	require.ErrorContains(t, err, "mode must be")
	require.ErrorContains(t, err, "format must be")
}

func TestStartRejectsRevokedToken(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.Token = "123456:REVOKED-token-xyz" })
	err := b.adapter.Start(context.Background(), b.core)
	require.EqualError(t, err, "telegram adapter: checking the bot token with getMe: unauthorized (is the token revoked?)")
	require.NotContains(t, err.Error(), "REVOKED")
	require.NotContains(t, b.logs.String(), "REVOKED")
	require.Error(t, b.adapter.Health())
	require.NoError(t, b.adapter.Stop(context.Background()))
}

func TestStartFailsOnUnreachableAPI(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.APIURL = "http://127.0.0.1:1" })
	err := b.adapter.Start(context.Background(), b.core)
	require.ErrorContains(t, err, "telegram adapter: checking the bot token with getMe:")
	require.NotContains(t, err.Error(), b.srv.Token(), "net/http quotes the URL, which holds the token")
	require.NoError(t, b.adapter.Stop(context.Background()))
}

func TestStartPollingRemovesWebhook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, 1, b.srv.Calls("getMe"))
	require.Equal(t, 1, b.srv.Calls("deleteWebhook"))
	require.Zero(t, b.srv.Calls("setWebhook"))
	require.NoError(t, b.adapter.Health())
}

func TestStartTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.EqualError(t, b.adapter.Start(context.Background(), b.core), "starting telegram adapter: already started")
}

func TestStopIsPromptDuringLongPoll(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.PollTimeout = time.Minute })
	b.start(t)
	b.srv.WaitCalls(t, "getUpdates", 1, waitFor)
	began := time.Now()
	require.NoError(t, b.adapter.Stop(context.Background()))
	require.Less(t, time.Since(began), time.Second)
	require.Error(t, b.adapter.Health())
	_, err := b.send(ada.ID, "after stop")
	require.EqualError(t, err, "sending telegram message: telegram adapter is stopped")
}

func TestHealthReportsFailingPolls(t *testing.T) {
	t.Parallel()
	b := newBundle(t, func(a *Adapter) { a.pollBackoffMin, a.pollBackoffMax = 50*time.Millisecond, 200*time.Millisecond })
	// The first five polls fail. Queued before Start, so no poll can slip
	// in ahead of the faults (a poll counted by Calls may not have reached
	// the fault check yet).
	for range 5 {
		b.srv.FailNext("getUpdates", telegramtest.ServerError())
	}
	b.start(t)
	// After three failures in a row Health reports them; the sixth poll
	// succeeds but is held (nothing to deliver), so it stays unhealthy.
	b.srv.WaitCalls(t, "getUpdates", 6, waitFor)
	eventually(t, func() bool { return b.adapter.Health() != nil }, "Health never reported the failing polls")
	err := b.adapter.Health()
	require.ErrorContains(t, err, "telegram adapter: polling failing:")
	require.ErrorContains(t, err, "getUpdates: 500 Internal Server Error")
	require.NotContains(t, err.Error(), b.srv.Token())
	// The held poll returns with this message: polling works again.
	b.srv.SendPrivate(ada, "second")
	b.core.Wait(t, 1, waitFor)
	require.NoError(t, b.adapter.Health())
}
