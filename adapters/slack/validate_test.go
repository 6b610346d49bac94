package slack

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	const (
		bot    = "xoxb-1111-2222-secretbot"
		app    = "xapp-1-A1-3333-secretapp"
		secret = "8f742231b10e8888abcd99yyyzzz85a5"
	)
	for _, tc := range []struct {
		name string
		set  func(a *Adapter)
		want []string
	}{
		{"socket ok", func(a *Adapter) {}, nil},
		{"events ok", func(a *Adapter) { a.Mode, a.AppToken = ModeEvents, "" }, nil},
		{"no bot token", func(a *Adapter) { a.BotToken = "" }, []string{"bot_token is required", "SLACK_BOT_TOKEN"}},
		{"user token", func(a *Adapter) { a.BotToken = "xoxp-1-2-3" }, []string{`bot_token must start with "xoxb-"`}},
		{"spaces", func(a *Adapter) { a.BotToken = "xoxb-1 2" }, []string{"bot_token must not contain spaces"}},
		{"socket without app token", func(a *Adapter) { a.AppToken = "" }, []string{"app_token is required", "SLACK_APP_TOKEN"}},
		{"bot token as app token", func(a *Adapter) { a.AppToken = bot }, []string{`app_token must start with "xapp-"`}},
		{"events without secret", func(a *Adapter) { a.Mode, a.SigningSecret = ModeEvents, "" }, []string{"signing_secret is required in events mode"}},
		{"bad mode", func(a *Adapter) { a.Mode = "rtm" }, []string{`mode must be socket or events, got "rtm"`}},
		{"bad api_url", func(a *Adapter) { a.APIURL = "slack.com/api" }, []string{"api_url must be an http or https URL"}},
		{"api_url with query", func(a *Adapter) { a.APIURL = "https://slack.com/api/?x=1" }, []string{"without query"}},
	} {
		a := New()
		a.BotToken, a.AppToken, a.SigningSecret = bot, app, secret
		tc.set(a)
		err := a.Validate()
		if tc.want == nil {
			require.NoError(t, err, tc.name)
			continue
		}
		require.Error(t, err, tc.name)
		for _, w := range tc.want {
			require.Contains(t, err.Error(), w, tc.name)
		}
		for _, s := range []config.Secret{bot, app, secret} {
			require.NotContains(t, err.Error(), s.Reveal(), tc.name)
		}
	}
}

func TestAPIURLKeepsTheTrailingSlash(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://slack.com/api/":      "https://slack.com/api/",
		"https://slack.com/api":       "https://slack.com/api/",
		"http://127.0.0.1:9000/api/":  "http://127.0.0.1:9000/api/",
		"http://gateway.local/slack/": "http://gateway.local/slack/",
	} {
		got, err := apiURL(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	c := New().Capabilities()
	require.Equal(t, 4000, c.MaxMessageLength)
	require.Equal(t, "mrkdwn", c.Markup)
	require.False(t, c.Typing, "slack has no typing indicator for bots")
	_, isTyping := any(New()).(core.TypingIndicator)
	require.False(t, isTyping, "so the core never asks for one")
	require.True(t, c.RichText)
	_, images := any(New()).(core.ImageSender)
	require.True(t, images)
	require.Equal(t, Platform, New().Platform())
	require.Equal(t, "Slack", core.PlatformTitle(New()), "the model hears the platform named as before")
}
