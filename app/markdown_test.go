package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// markdownReply is how chat models answer: Markdown with every common
// element.
const markdownReply = "Here is **bold**, *italic*, some `code` and [the docs](https://example.com/docs).\n\n" +
	"## Steps\n\n" +
	"- feed the starter\n- wait\n\n" +
	"> a quote\n\n" +
	"```go\nfmt.Println(\"hi\")\n```"

// requireRendered checks what a user sees of markdownReply on a platform:
// no Markdown marker showing, each element in the platform's own style.
func requireRendered(t *testing.T, platform string, got markuptest.Rendered) {
	t.Helper()
	for _, marker := range []string{"**", "`", "](", "## "} {
		require.NotContains(t, got.Text, marker, "%s: a Markdown marker shows: %q", platform, got.Text)
	}
	require.True(t, got.Has(markuptest.Bold, "bold"), "%s: bold: %+v", platform, got)
	require.True(t, got.Has(markuptest.Italic, "italic"), "%s: italic: %+v", platform, got)
	require.True(t, got.Has(markuptest.Code, "code"), "%s: inline code: %+v", platform, got)
	require.Equal(t, "https://example.com/docs", got.LinkTo("the docs"), "%s: link: %+v", platform, got)
	pre := got.Styled(markuptest.Pre)
	require.Len(t, pre, 1, "%s: one code block: %+v", platform, got)
	require.Equal(t, `fmt.Println("hi")`, strings.TrimSpace(pre[0]), "%s: code block", platform)
	require.Contains(t, got.Text, "feed the starter", platform)
	require.Contains(t, got.Text, "a quote", platform)
}

// TestMarkdownIsFormattedOnEveryPlatform: one bot on Telegram, Discord,
// Slack and the web chat answers each user with the same Markdown; each
// platform's fake reads it back with its own markup rules.
func TestMarkdownIsFormattedOnEveryPlatform(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text(markdownReply) })
	tg := telegramtest.NewServer(t)
	dc := discordtest.NewServer(t)
	sl := slacktest.NewServer(t)
	r := b.start(t, b.writeConfig(t, fmt.Sprintf(`adapters:
  web: {enabled: true}
  telegram: {token: "%s", api_url: "%s"}
  discord: {token: "%s", api_url: "%s"}
  slack: {mode: socket, bot_token: "%s", app_token: "%s", api_url: "%s"}
runs:
  debounce: 0s
`, tg.Token(), tg.URL(), dc.Token(), dc.URL(), sl.BotToken(), sl.AppToken(), sl.APIURL())))
	dc.WaitReady(t, waitFor)
	sl.WaitConnections(t, 1, waitFor)

	tg.SendPrivate(ada, "how?")
	tgSent := tg.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "MarkdownV2", tgSent[0].ParseMode, "formatted by default")
	shown, err := markuptest.TelegramV2(tgSent[0].Text)
	require.NoError(t, err, "Telegram accepts the markup")
	requireRendered(t, "telegram", shown)
	require.Equal(t, shown.Text, tgSent[0].Plain, "the fake read it the same way")

	channel, _ := dc.SendDM(lin, "how?")
	// A reply that takes a while grows, showing its first words first:
	// wait until it reads as sent whole (markup renders it as the
	// adapters do), then check what that shows.
	dcSent := dc.WaitShows(t, channel, waitFor, markup.Discord(markdownReply))
	requireRendered(t, "discord", markuptest.Discord(dcSent[0].Content))

	slChannel, _ := sl.SendDM(mei, "how?")
	slSent := sl.WaitShows(t, slChannel, waitFor, slacktest.Unescape(markup.Slack(markdownReply)))
	require.True(t, slSent[0].Mrkdwn)
	requireRendered(t, "slack", markuptest.Slack(slSent[0].Text, slSent[0].Mrkdwn))

	const client = "client-markdown-1"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "how?")
	m := events.nextWireMessage(t)
	require.Equal(t, markdownReply, m.Text, "the page keeps the Markdown as written")
	require.Empty(t, markuptest.UnsafeHTML(m.HTML))
	page, err := markuptest.HTML(m.HTML)
	require.NoError(t, err)
	requireRendered(t, "web", page)
}

// wireMessage is a message event of the web chat.
type wireMessage struct {
	ID, Role, Text, HTML, At string
	Choices                  []struct{ Label, Data string }
	Files                    []struct{ Kind, Name, MIME, URL string }
}

// nextWireMessage returns the next "message" event.
func (s *sseReader) nextWireMessage(t testing.TB) wireMessage {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		select {
		case ev, ok := <-s.events:
			require.True(t, ok, "event stream ended")
			if ev[0] != "message" {
				continue
			}
			var m wireMessage
			require.NoError(t, json.Unmarshal([]byte(ev[1]), &m))
			return m
		case <-deadline:
			t.Fatal("no message event arrived")
		}
	}
}

// TestTelegramMarkupRefusedIsSentPlain: Telegram refuses a formatted part
// as malformed; the part goes again as plain text and the log says where
// Telegram stumbled.
func TestTelegramMarkupRefusedIsSentPlain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("Here is **bold** and `code`."))
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.RefuseNextMarkup()
	fake.SendPrivate(ada, "hi")
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Len(t, sent, 1, "delivered once")
	require.Empty(t, sent[0].ParseMode, "the resend is plain text")
	require.Equal(t, "Here is bold and code.", sent[0].Plain, "no markup shows")
	require.Eventually(t, func() bool {
		return containsAll(r.stderr.String(), "level=WARN", "can't parse entities", "byte offset")
	}, waitFor, 10*time.Millisecond, "the refusal is logged with its position:\n%s", r.stderr)
}
