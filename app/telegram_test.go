package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

var ada = telegramtest.User{ID: 4242, FirstName: "Ada", LastName: "Lovelace"}

// telegramConfig enables the telegram adapter against the fake, with no
// debounce so a DM is answered at once.
func telegramConfig(fake *telegramtest.Server, extra string) string {
	return fmt.Sprintf(`adapters:
  web: {enabled: false}
  telegram:
    token: "%s"
    api_url: "%s"
%s
runs:
  debounce: 0s
`, fake.Token(), fake.URL(), extra)
}

func TestTelegramDMInReplyOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("Hello Ada!"))
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	fake.SendGroup(-100, ada, "hello everyone") // ignored: not a DM
	fake.SendPrivate(ada, "hi bot")
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "Hello Ada!", sent[0].Plain)
	require.Empty(t, fake.Sent(-100), "a group message is never answered")

	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "hi bot", reqs[0].LastUserMessage())
	r.stop(t)
	stored := b.storedMessagesOn(t, telegram.Platform, "4242")
	require.Len(t, stored, 2)
	require.Equal(t, "hi bot", stored[0].Content)
	require.Equal(t, "Hello Ada!", stored[1].Content)
	require.Equal(t, fmt.Sprint(sent[0].MessageID), stored[1].PlatformMessageID)
}

func TestTelegramLongReplyIsSplit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	var long strings.Builder
	for i := 0; long.Len() < 5000; i++ {
		fmt.Fprintf(&long, "Sentence number %d of a long answer.\n", i)
	}
	text := strings.TrimSpace(long.String())
	b.model.Enqueue(llmtest.Text(text))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPrivate(ada, "tell me everything")
	sent := fake.WaitSent(t, ada.ID, 2, waitFor)
	require.Len(t, sent, 2)
	var shown []string
	for _, s := range sent {
		require.Equal(t, "MarkdownV2", s.ParseMode, "every part formatted")
		require.LessOrEqual(t, utf8.RuneCountInString(s.Text), 4096)
		shown = append(shown, s.Plain)
	}
	// The parts were cut between lines; the line break at the cut is the
	// message boundary.
	require.Equal(t, text, strings.Join(shown, "\n"), "nothing lost, in order")
}

func TestTelegramRateLimitIsHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("worth the wait"))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.FailNext("sendMessage", telegramtest.TooManyRequests(1))
	start := time.Now()
	fake.SendPrivate(ada, "hi")
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "worth the wait", sent[0].Plain)
	require.GreaterOrEqual(t, sent[0].At.Sub(start), time.Second, "retry_after: 1 was honoured")
	require.Equal(t, 2, fake.Calls("sendMessage"), "one refused, one delivered")
	require.Len(t, fake.Sent(ada.ID), 1, "delivered once")
}

func TestTelegramWebhookChecksTheSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("webhook works"))
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, `    mode: webhook
    webhook_secret: "s3cret-Token_1"`)))

	post := func(secret string, update any) int {
		body, err := json.Marshal(update)
		require.NoError(t, err)
		req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/webhooks/telegram", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	update := func(id int, text string) map[string]any {
		return map[string]any{"update_id": id, "message": map[string]any{
			"message_id": id, "date": time.Now().Unix(), "text": text,
			"chat": map[string]any{"id": ada.ID, "type": "private", "first_name": "Ada"},
			"from": map[string]any{"id": ada.ID, "is_bot": false, "first_name": "Ada"},
		}}
	}
	// The fake must know the chat before the bot may write to it.
	fake.SendOwn(ada.ID, "(chat opened)")
	require.Equal(t, http.StatusUnauthorized, post("", update(1, "no secret")))
	require.Equal(t, http.StatusUnauthorized, post("wrong", update(2, "bad secret")))
	require.Equal(t, http.StatusOK, post("s3cret-Token_1", update(3, "good secret")))
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "webhook works", sent[0].Plain)
	reqs := b.model.Requests()
	require.Len(t, reqs, 1, "only the update with the right secret was processed")
	require.Equal(t, []string{"good secret"}, userContents(reqs[0]))
}

func TestTelegramRevokedTokenLeavesTheOtherAdaptersRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, fmt.Sprintf(`adapters:
  web: {enabled: true}
  telegram:
    token: "123:REVOKED-token"
    api_url: "%s"
runs:
  debounce: 0s
`, fake.URL())))
	require.Eventually(t, func() bool {
		return strings.Contains(r.stderr.String(), "adapter did not start")
	}, waitFor, 10*time.Millisecond)
	logs := r.stderr.String()
	require.Contains(t, logs, "adapter=telegram")
	require.NotContains(t, logs, "REVOKED-token")

	resp, err := http.Get("http://" + r.addr + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	var health struct{ Components map[string]string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&health))
	require.Contains(t, health.Components["adapter:telegram"], "telegram")

	// The web chat still answers.
	b.model.Enqueue(llmtest.Text("web is fine"))
	events := openEvents(t, r.addr, "client-tg-01")
	postMessage(t, r.addr, "client-tg-01", "hello")
	require.Equal(t, "web is fine", events.nextMessage(t))
}

func userContents(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role == "user" {
			out = append(out, m.Content)
		}
	}
	return out
}

func (b *testBundle) storedMessagesOn(t *testing.T, p core.Platform, thread string) []core.Message {
	t.Helper()
	ctx := context.Background()
	st := b.openStoreFile(t)
	conv, err := st.ConversationByThread(ctx, p, thread)
	require.NoError(t, err)
	msgs, err := st.Messages(ctx, conv.ID)
	require.NoError(t, err)
	return msgs
}
