package app

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// api calls the bot's HTTP API with the token; headers are name, value
// pairs. It returns the status and the decoded JSON body.
func (c *companion) api(t *testing.T, method, path string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	return callAPI(t, c.testBundle, c.app.http.Addr(), method, path, body, headers...)
}

func TestRoutedMessageReachesTelegramOnceAndIsSent(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	conv := c.conv(t)

	body := map[string]any{"channel_type": "telegram", "channel_thread_id": fmt.Sprint(c.user.ID), "origin": "connector",
		"text": "Your build passed ✅"}
	code, out := c.api(t, http.MethodPost, "/api/v1/messages", body, "Idempotency-Key", "build-4711")
	require.Equal(t, http.StatusAccepted, code, out)
	require.Equal(t, "pending", out["status"])
	require.EqualValues(t, conv.ID, out["conversation_id"])
	id := int64(out["id"].(float64))

	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Your build passed ✅", sent[1].Text)
	c.settle(t)
	code, out = c.api(t, http.MethodGet, fmt.Sprintf("/api/v1/messages/%d", id), nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "sent", out["status"])
	require.Equal(t, fmt.Sprint(sent[1].MessageID), out["platform_message_id"])
	require.Equal(t, "connector", out["origin"])

	// The same request again (a retry after a timeout): the same message.
	code, out = c.api(t, http.MethodPost, "/api/v1/messages", body, "Idempotency-Key", "build-4711")
	require.Equal(t, http.StatusAccepted, code)
	require.EqualValues(t, id, out["id"])
	require.Equal(t, "sent", out["status"])
	c.advance(t, time.Minute)
	require.Len(t, c.fake.Sent(c.user.ID), 2, "sent once")

	msgs := c.stored(t)
	last := msgs[len(msgs)-1]
	require.Equal(t, core.SourceAPI, last.Source)
	require.Equal(t, core.RoleAssistant, last.Role)
	require.Equal(t, "connector", last.Metadata["origin"])
	require.Len(t, c.model.Requests(), 1, "no model call to route a message")

	// A day later the key is free again: a new message.
	c.advance(t, 24*time.Hour)
	code, out = c.api(t, http.MethodPost, "/api/v1/messages", body, "Idempotency-Key", "build-4711")
	require.Equal(t, http.StatusAccepted, code)
	require.NotEqualValues(t, id, out["id"])
	c.fake.WaitSent(t, c.user.ID, 3, waitFor)
}

func TestRoutedMessageAtSendAt(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	conv := c.conv(t)

	at := companionT0.Add(time.Hour).Format(time.RFC3339)
	code, out := c.api(t, http.MethodPost, "/api/v1/messages", map[string]any{"conversation_id": conv.ID,
		"text": "Stand-up in 5 minutes", "send_at": at})
	require.Equal(t, http.StatusAccepted, code, out)
	id := int64(out["id"].(float64))
	code, out = c.api(t, http.MethodGet, fmt.Sprintf("/api/v1/messages/%d", id), nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "pending", out["status"])
	require.Equal(t, "2026-11-23T10:00:00Z", out["send_at"])

	c.advance(t, 59*time.Minute)
	require.Len(t, c.fake.Sent(c.user.ID), 1, "not before send_at")
	c.advance(t, time.Minute)
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Stand-up in 5 minutes", sent[1].Text)
	c.settle(t)
	_, out = c.api(t, http.MethodGet, fmt.Sprintf("/api/v1/messages/%d", id), nil)
	require.Equal(t, "sent", out["status"])
	require.Equal(t, "2026-11-23T10:00:00Z", out["sent_at"])

	// The jobs and transcript endpoints show it; a sent job cannot be
	// cancelled.
	code, out = c.api(t, http.MethodGet, fmt.Sprintf("/api/v1/jobs?conversation_id=%d&status=sent", conv.ID), nil)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, out["jobs"], 1)
	code, out = c.api(t, http.MethodGet, fmt.Sprintf("/api/v1/conversations/%d/messages?after_seq=2", conv.ID), nil)
	require.Equal(t, http.StatusOK, code)
	ms := out["messages"].([]any)
	require.Len(t, ms, 1)
	require.Equal(t, "api", ms[0].(map[string]any)["source"])
	code, out = c.api(t, http.MethodDelete, fmt.Sprintf("/api/v1/jobs/%d", id), nil)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, out["error"], "is sent")
}

func TestRoutedMessageToATelegramUserWithoutAConversation(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	stranger := telegramtest.User{ID: 4242, FirstName: "Stranger"}
	code, out := c.api(t, http.MethodPost, "/api/v1/messages", map[string]any{"channel_type": "telegram",
		"channel_user_id": fmt.Sprint(stranger.ID), "text": "hello?"})
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Contains(t, out["error"], "has not started the bot")
	var n int64
	require.NoError(t, c.app.store.DB().Raw(`SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM conversations)`).Row().Scan(&n))
	require.Zero(t, n, "nothing stored for an unreachable user")

	// Once they have pressed Start, the bot may write first.
	newbie := telegramtest.User{ID: 4343, FirstName: "Nina", LastName: "Neu"}
	c.fake.StartedBy(newbie)
	code, out = c.api(t, http.MethodPost, "/api/v1/messages", map[string]any{"channel_type": "telegram",
		"channel_user_id": fmt.Sprint(newbie.ID), "origin": "system", "text": "Welcome aboard!"})
	require.Equal(t, http.StatusAccepted, code, out)
	sent := c.fake.WaitSent(t, newbie.ID, 1, waitFor)
	require.Equal(t, "Welcome aboard!", sent[0].Text)
	c.settle(t) // stored once delivered
	conv, err := c.app.store.ConversationByThread(context.Background(), telegram.Platform, fmt.Sprint(newbie.ID))
	require.NoError(t, err)
	require.Equal(t, "Nina Neu", conv.DisplayName)
	require.Equal(t, "Europe/Berlin", conv.TimeZone)
	require.EqualValues(t, conv.ID, out["conversation_id"])

	// Their answer joins that conversation, and the turn sees the welcome.
	c.model.Enqueue(llmtest.Text("Glad you're here, Nina!"))
	c.fake.SendPrivate(newbie, "thanks!")
	c.fake.WaitSent(t, newbie.ID, 2, waitFor)
	require.Equal(t, []string{"assistant:Welcome aboard!", "user:thanks!"}, roles(c.model.Requests()[0]))
}

func TestRoutedRichTextAndImageReachTelegramAsTheUserSeesThem(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("hi"))
	c.say(t, "hello", 1)
	conv := c.conv(t)

	code, out := c.api(t, http.MethodPost, "/api/v1/messages", map[string]any{"conversation_id": conv.ID, "type": "rich_text",
		"text": "**Build #12 passed** in 3.5 min (v1.2-rc!) — see [the log](https://ci.test/12?a=1&b=2)"})
	require.Equal(t, http.StatusAccepted, code, out)
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	got := sent[1]
	require.Equal(t, "MarkdownV2", got.ParseMode)
	shown := got.Shown()
	require.Equal(t, "Build #12 passed in 3.5 min (v1.2-rc!) — see the log", shown.Text, "reserved characters came through as text")
	require.True(t, shown.Has(markuptest.Bold, "Build #12 passed"))
	require.Equal(t, "https://ci.test/12?a=1&b=2", shown.LinkTo("the log"))

	code, out = c.api(t, http.MethodPost, "/api/v1/messages", map[string]any{"conversation_id": conv.ID, "type": "image",
		"image_url": "https://img.test/chart.png", "text": "_Weekly_ chart"})
	require.Equal(t, http.StatusAccepted, code, out)
	sent = c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	require.Equal(t, "https://img.test/chart.png", sent[2].Photo)
	require.Equal(t, "_Weekly_ chart", sent[2].Plain, "a text-type caption is shown as written")
	c.settle(t)
	_, out = c.api(t, http.MethodGet, fmt.Sprintf("/api/v1/messages/%v", out["id"]), nil)
	require.Equal(t, "sent", out["status"])
	require.Equal(t, "image", out["type"])
	msgs := c.stored(t)
	require.Equal(t, "https://img.test/chart.png", msgs[len(msgs)-1].Metadata["image_url"])
}
