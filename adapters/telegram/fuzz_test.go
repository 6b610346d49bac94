package telegram

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
)

// wireUpdate is the part of a Telegram update the oracle reads.
type wireUpdate struct {
	Message *struct {
		Chat struct {
			ID   int64  `json:"id"`
			Type string `json:"type"`
		} `json:"chat"`
		From *struct {
			ID    int64 `json:"id"`
			IsBot bool  `json:"is_bot"`
		} `json:"from"`
		Text    string `json:"text"`
		Caption string `json:"caption"`
	} `json:"message"`
}

// FuzzWebhook checks the Telegram adapter's inbound decoding through its
// webhook handler (POST /webhooks/telegram with the secret header), on
// body as it comes and on an update made of the other arguments. Whatever
// the body: without the right secret it is a 401 and nothing reaches the
// core; with it the answer is 200, or a 4xx for what is not JSON, never a
// 5xx (the core takes everything); at most one message reaches the core,
// and only from a private chat, with the chat and sender ids of the update
// and its text (its caption when it has no text; blank only with a file).
// The made update is taken exactly when it is a private chat's message
// from a sender who is not a bot, with some text or caption.
func FuzzWebhook(f *testing.F) {
	for _, s := range []struct {
		body           string
		chatType       string
		chatID, fromID int64
		isBot          bool
		text, caption  string
	}{
		{`{"update_id":1,"message":{"message_id":1,"date":1700000000,"chat":{"id":100001,"type":"private"},"from":{"id":100001,"first_name":"Ada"},"text":"hi"}}`,
			"private", 100001, 100001, false, "hello", ""},
		{`{"update_id":2,"message":{"message_id":2,"date":1,"chat":{"id":-100,"type":"group"},"from":{"id":5},"text":"hi group"}}`,
			"group", -100, 5, false, "hi group", ""},
		{`{"update_id":3,"channel_post":{"message_id":3,"date":1,"chat":{"id":-1001,"type":"channel"},"text":"post"}}`,
			"channel", -1001, 0, false, "post", ""},
		{`{"update_id":4,"message":{"message_id":4,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7,"is_bot":true},"text":"bot"}}`,
			"private", 7, 7, true, "bot", ""},
		{`{"update_id":5,"message":{"message_id":5,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"caption":"a photo","photo":[]}}`,
			"private", 7, 7, false, "", "a photo"},
		{`{"update_id":5,"message":{"message_id":5,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"voice":{"file_id":"v","file_unique_id":"u","duration":2}}}`,
			"private", 7, 7, false, "", ""},
		{`{"update_id":6,"message":{"message_id":6,"date":1,"chat":{"id":7,"type":"PRIVATE"},"from":{"id":7},"text":"case"}}`,
			"PRIVATE", 7, 7, false, "case", ""},
		{`{"update_id":7,"message":{"chat":{"id":0,"type":"private"},"from":{"id":7},"text":"no chat"}}`,
			"private", 0, 7, false, "no chat", ""},
		{`{"update_id":8,"message":{"chat":{"id":7,"type":"private"},"text":"no sender"}}`,
			"private", 7, 0, false, "   ", "\t"},
		{`{"update_id":9,"message":"garbage"}`, "supergroup", -5, 5, false, "x", "y"},
		{`{"update_id":10,"edited_message":{"message_id":1,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7},"text":"edit"}}`,
			"private", 9007199254740993, -1, false, "\xff", ""},
		{`{"message":{"chat":{"id":7,"type":"private"},"from":{"id":7},"text":"no update id"}}`, "private", 1, 1, false, "\u0000", ""},
		{`[1,2,3]`, "sender", 7, 7, false, "x", ""},
		{`not json`, "", 0, 0, false, "", ""},
	} {
		f.Add([]byte(s.body), s.chatType, s.chatID, s.fromID, s.isBot, s.text, s.caption)
	}
	h := newFuzzHost(f)
	srv, box, mux := h.srv, h.box, h.mux
	post := func(secret string, body []byte) (int, []core.InboundMessage) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		mux.ServeHTTP(rec, req)
		return rec.Code, box.Take()
	}

	f.Fuzz(func(t *testing.T, body []byte, chatType string, chatID, fromID int64, isBot bool, text, caption string) {
		if status, got := post("not-"+webhookSecret, body); status != http.StatusUnauthorized || len(got) > 0 {
			t.Fatalf("wrong secret: %d, and the core got %+v", status, got)
		}
		status, got := post(webhookSecret, body)
		if status != http.StatusOK && (status < 400 || status >= 500) || len(got) > 1 {
			t.Fatalf("%q: %d, and the core got %+v", body, status, got)
		}
		if len(got) == 1 {
			var upd wireUpdate
			if err := json.Unmarshal(body, &upd); err != nil || upd.Message == nil || upd.Message.From == nil {
				t.Fatalf("%q reached the core as %+v, but has no message with a sender (%v)", body, got[0], err)
			}
			m := upd.Message
			textOrCaption := m.Text
			if textOrCaption == "" {
				textOrCaption = m.Caption
			}
			checkAccepted(t, got[0], m.Chat.Type, m.Chat.ID, m.From.ID, textOrCaption)
		}

		made, err := json.Marshal(map[string]any{"update_id": 1, "message": map[string]any{
			"message_id": 1, "date": 1700000000, "chat": map[string]any{"id": chatID, "type": chatType},
			"from": map[string]any{"id": fromID, "is_bot": isBot, "first_name": "F"}, "text": text, "caption": caption,
		}})
		if err != nil {
			t.Fatal(err)
		}
		status, got = post(webhookSecret, made)
		var upd wireUpdate
		if status != http.StatusOK || len(got) > 1 || json.Unmarshal(made, &upd) != nil {
			t.Fatalf("%s: %d, and the core got %+v", made, status, got)
		}
		// The texts as JSON carries them (valid UTF-8).
		textOrCaption := upd.Message.Text
		if textOrCaption == "" {
			textOrCaption = upd.Message.Caption
		}
		want := chatType == "private" && chatID != 0 && fromID != 0 && !isBot && fromID != srv.BotID() &&
			strings.TrimSpace(textOrCaption) != ""
		if want != (len(got) == 1) {
			t.Fatalf("%s: want taken %t, the core got %+v", made, want, got)
		}
		if want {
			checkAccepted(t, got[0], chatType, chatID, fromID, textOrCaption)
		}
	})
}

// checkAccepted checks a message that reached the core against the update
// it came from.
func checkAccepted(t *testing.T, m core.InboundMessage, chatType string, chatID, fromID int64, text string) {
	t.Helper()
	switch {
	case chatType != "private":
		t.Fatalf("a message from a %q chat reached the core: %+v", chatType, m)
	case m.Platform != Platform || !m.Direct:
		t.Fatalf("not a Telegram DM: %+v", m)
	case m.ChannelThreadID == "" || m.ChannelThreadID != strconv.FormatInt(chatID, 10):
		t.Fatalf("chat %d became thread %q", chatID, m.ChannelThreadID)
	case m.ChannelUserID == "" || m.ChannelUserID != strconv.FormatInt(fromID, 10):
		t.Fatalf("sender %d became user %q", fromID, m.ChannelUserID)
	case m.Text != text || strings.TrimSpace(m.Text) == "" && len(m.Attachments) == 0:
		t.Fatalf("text %q became %q", text, m.Text)
	case len(m.Attachments) > 1 || len(m.Attachments) == 1 && m.Attachments[0].Ref == "":
		t.Fatalf("attachments %+v", m.Attachments)
	case m.SentAt.IsZero() || m.SentAt.Location() != time.UTC:
		t.Fatalf("sent at %v", m.SentAt)
	}
}
