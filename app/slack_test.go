package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

var mei = slacktest.User{ID: "U0MEI00001", Name: "mei", RealName: "Mei Tanaka"}

// slackConfig enables the slack adapter against the fake in mode, with no
// debounce so a DM is answered at once.
func slackConfig(fake *slacktest.Server, mode string) string {
	return fmt.Sprintf(`adapters:
  web: {enabled: false}
  slack:
    mode: %s
    bot_token: "%s"
    app_token: "%s"
    signing_secret: "%s"
    api_url: "%s"
runs:
  debounce: 0s
`, mode, fake.BotToken(), fake.AppToken(), fake.SigningSecret(), fake.APIURL())
}

// startSlack runs parley with the slack adapter in mode against a fresh
// fake (extra: more YAML for its config); in events mode the fake posts
// to the running server.
func startSlack(t *testing.T, b *testBundle, mode string, extra ...string) (*slacktest.Server, *running) {
	t.Helper()
	fake := slacktest.NewServer(t)
	r := b.start(t, b.writeConfig(t, slackConfig(fake, mode)+strings.Join(extra, "")))
	if mode == "events" {
		fake.UseEventsAPI("http://" + r.addr + "/webhooks/slack/events")
	} else {
		fake.WaitConnections(t, 1, waitFor)
	}
	return fake, r
}

func TestSlackDMInReplyOut(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"socket", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.model.Enqueue(llmtest.Text("Hi Mei! Fish & chips <3"))
			fake, r := startSlack(t, b, mode)

			fake.SendChannel("C0GENERAL01", mei, "hello channel") // ignored
			channel, _ := fake.SendDM(mei, "hi bot")
			sent := fake.WaitShows(t, channel, waitFor, "Hi Mei! Fish & chips <3")
			require.Equal(t, "Hi Mei! Fish &amp; chips &lt;3", sent[0].Text, "escaped for mrkdwn")
			require.Empty(t, fake.Sent("C0GENERAL01"), "a channel message is never answered")

			// The reply comes back as the bot's own message event and is
			// ignored: a DM after it is the only other thing the model sees.
			// (The reply is stored just after Slack took it: wait for that,
			// as a person would take longer than that to answer.)
			b.waitStored(t, slack.Platform, channel, 2)
			b.model.Enqueue(llmtest.Text("second answer"))
			fake.SendDM(mei, "and again")
			sent = fake.WaitShows(t, channel, waitFor, "Hi Mei! Fish & chips <3", "second answer")
			reqs := b.model.Requests()
			require.Len(t, reqs, 2)
			require.Equal(t, []string{"hi bot", "and again"}, userContents(reqs[1]))

			r.stop(t)
			stored := b.storedMessagesOn(t, slack.Platform, channel)
			require.Len(t, stored, 4)
			require.Equal(t, "hi bot", stored[0].Content)
			require.Equal(t, "Hi Mei! Fish & chips <3", stored[1].Content)
			require.Equal(t, sent[0].TS, stored[1].PlatformMessageID)
		})
	}
}

// waitStored waits until the conversation on thread holds n messages.
func (b *testBundle) waitStored(t *testing.T, p core.Platform, thread string, n int) {
	t.Helper()
	st := b.openStoreFile(t)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		conv, err := st.ConversationByThread(ctx, p, thread)
		if err != nil {
			return false
		}
		msgs, err := st.Messages(ctx, conv.ID)
		return err == nil && len(msgs) >= n
	}, waitFor, 5*time.Millisecond, "%d messages stored on %s %s", n, p, thread)
}

func TestSlackEventsBadSignatureIsRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Enqueue(llmtest.Text("signed ones only"))
	fake, r := startSlack(t, b, "events")
	url := "http://" + r.addr + "/webhooks/slack/events"
	body := []byte(`{"type":"event_callback","event_id":"Ev0FORGED1","event":{"type":"message","channel":"D0MEI00001","user":"U0MEI00001","text":"forged","ts":"1700000000.000100","channel_type":"im"}}`)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", fmt.Sprint(time.Now().Unix()))
	h.Set("X-Slack-Signature", "v0=0000000000000000000000000000000000000000000000000000000000000000")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	status, _, err := fake.PostEvent(ctx, url, body, h)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, status)

	channel, _ := fake.SendDM(mei, "signed")
	fake.WaitShows(t, channel, waitFor, "signed ones only")
	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, []string{"signed"}, userContents(reqs[0]), "the forged event was not processed")
}

func TestSlackRetriedEventIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"socket", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.model.Enqueue(llmtest.Text("once"), llmtest.Text("sentinel answer"))
			fake, _ := startSlack(t, b, mode)
			channel, _ := fake.SendDM(mei, "hello")
			id := fake.LastEventID()
			fake.WaitSent(t, channel, 1, waitFor)
			fake.Redeliver(id)
			require.Eventually(t, func() bool { return fake.Deliveries(id) == 2 && fake.Acked(id) }, waitFor, 5*time.Millisecond)
			fake.SendDM(mei, "sentinel")
			fake.WaitShows(t, channel, waitFor, "once", "sentinel answer")
			require.Len(t, b.model.Requests(), 2, "the retried event made no second turn")
		})
	}
}

func TestSlackSocketDropCarriesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Enqueue(llmtest.Text("before"), llmtest.Text("after"))
	fake, _ := startSlack(t, b, "socket")
	channel, _ := fake.SendDM(mei, "one")
	fake.WaitSent(t, channel, 1, waitFor)
	fake.DropSockets()
	fake.WaitConnections(t, 2, waitFor)
	fake.SendDM(mei, "two")
	fake.WaitShows(t, channel, waitFor, "before", "after")
}

func TestSlackRateLimitDeliversOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"socket", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.model.Enqueue(llmtest.Text("after the limit"))
			// Sent whole: a reply that grows (under load) would post its
			// first words, and the limit would fall on them.
			fake, r := startSlack(t, b, mode, "bot: {streaming: {enabled: false}}\n")
			fake.RateLimitNext("chat.postMessage", time.Second)
			start := time.Now()
			channel, _ := fake.SendDM(mei, "hi")
			fake.WaitShows(t, channel, waitFor, "after the limit")
			sent := fake.Sent(channel)
			require.GreaterOrEqual(t, sent[0].At.Sub(start), time.Second, "Retry-After was honoured")
			require.Equal(t, 2, fake.Calls("chat.postMessage"), "one limited, one delivered")

			r.stop(t)
			require.Len(t, fake.Sent(channel), 1, "delivered once")
			stored := b.storedMessagesOn(t, slack.Platform, channel)
			require.Len(t, stored, 2)
			require.Equal(t, sent[0].TS, stored[1].PlatformMessageID, "the reply is stored with its slack ts")
		})
	}
}
