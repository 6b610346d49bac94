package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// wireChat and wireUser are the parts of a chat and a user the oracle
// reads.
type (
	wireChat struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	wireUser struct {
		ID    int64 `json:"id"`
		IsBot bool  `json:"is_bot"`
	}
	wireReaction struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
)

// wireEvent is the part of a tap, edit or reaction update the oracle
// reads.
type wireEvent struct {
	CallbackQuery *struct {
		ID      string   `json:"id"`
		From    wireUser `json:"from"`
		Data    string   `json:"data"`
		Message *struct {
			ID   int      `json:"message_id"`
			Chat wireChat `json:"chat"`
		} `json:"message"`
		InlineMessageID string `json:"inline_message_id"`
	} `json:"callback_query"`
	EditedMessage *struct {
		ID      int       `json:"message_id"`
		Chat    wireChat  `json:"chat"`
		From    *wireUser `json:"from"`
		Text    string    `json:"text"`
		Caption string    `json:"caption"`
	} `json:"edited_message"`
	MessageReaction *struct {
		Chat        wireChat       `json:"chat"`
		MessageID   int            `json:"message_id"`
		User        *wireUser      `json:"user"`
		OldReaction []wireReaction `json:"old_reaction"`
		NewReaction []wireReaction `json:"new_reaction"`
	} `json:"message_reaction"`
}

// fuzzHost is an adapter in webhook mode against the fake, started, with
// the Recorder it hands updates to.
type fuzzHost struct {
	a   *Adapter
	srv *telegramtest.Server
	box *adaptertest.Recorder
	mux *http.ServeMux
}

func newFuzzHost(f *testing.F) *fuzzHost {
	srv := telegramtest.NewServer(f)
	a := New()
	a.Token = config.Secret(srv.Token())
	a.APIURL = srv.URL()
	a.Mode = ModeWebhook
	a.WebhookSecret = webhookSecret
	if err := a.Provision(context.Background(), core.Env{Logger: (&coretest.Logs{}).Logger()}); err != nil {
		f.Fatal(err)
	}
	if err := a.Validate(); err != nil {
		f.Fatal(err)
	}
	box := adaptertest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := a.Start(ctx, box); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = a.Stop(ctx)
	})
	mux := http.NewServeMux()
	a.Mount(mux)
	return &fuzzHost{a: a, srv: srv, box: box, mux: mux}
}

// post delivers body to the webhook with the right secret and returns
// the status.
func (h *fuzzHost) post(body []byte) int {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", webhookSecret)
	h.mux.ServeHTTP(rec, req)
	return rec.Code
}

// FuzzUpdateChanges checks the decoding of taps (callback_query), edits
// (edited_message) and reactions (message_reaction) through the webhook,
// on body as it comes and on an update made of the other arguments
// (kind%3: a tap, an edit, a reaction). Whatever the body: the answer is
// 200 or a 4xx, never a 5xx; none of them reaches the core as a message;
// at most one tap and one change reach it, each only from a private chat
// and a user who is not a bot, with the update's chat, user, message and
// data or text; a reaction reaches it only from a private chat, each
// emoji added (in new_reaction, not in old_reaction) or taken back (the
// other way). The made update is taken exactly when all of that holds.
func FuzzUpdateChanges(f *testing.F) {
	for _, s := range []struct {
		body                     string
		kind                     uint8
		chatType                 string
		chatID, fromID           int64
		isBot                    bool
		msgID                    int
		text, emojiOld, emojiNew string
	}{
		{`{"update_id":1,"callback_query":{"id":"q1","from":{"id":7,"first_name":"A"},"chat_instance":"c","data":"q1.0","message":{"message_id":3,"date":1,"chat":{"id":7,"type":"private"}}}}`,
			0, "private", 7, 7, false, 3, "q1.0", "", ""},
		{`{"update_id":2,"callback_query":{"id":"q2","from":{"id":7},"data":"x","message":{"message_id":3,"date":0,"chat":{"id":7,"type":"private"}}}}`,
			0, "group", -100, 7, false, 3, "q1.1", "", ""},
		{`{"update_id":3,"callback_query":{"id":"q3","from":{"id":7},"data":"x","inline_message_id":"i"}}`, 0, "private", 7, 7, true, 0, "", "", ""},
		{`{"update_id":4,"edited_message":{"message_id":1,"date":1,"edit_date":2,"chat":{"id":7,"type":"private"},"from":{"id":7},"text":"edited"}}`,
			1, "private", 7, 7, false, 1, "edited", "", ""},
		{`{"update_id":5,"edited_message":{"message_id":1,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7,"is_bot":true},"caption":"c"}}`,
			1, "private", 7, 0, false, 1, " ", "", ""},
		{`{"update_id":6,"message_reaction":{"chat":{"id":7,"type":"private"},"message_id":4,"user":{"id":7},"date":1,"old_reaction":[{"type":"emoji","emoji":"👍"}],"new_reaction":[{"type":"emoji","emoji":"🔥"},{"type":"custom_emoji","custom_emoji_id":"5"}]}}`,
			2, "private", 7, 7, false, 4, "", "👍", "🔥"},
		{`{"update_id":7,"message_reaction":{"chat":{"id":-5,"type":"supergroup"},"message_id":4,"actor_chat":{"id":-5,"type":"supergroup"},"date":1,"old_reaction":[],"new_reaction":[{"type":"paid"}]}}`,
			2, "private", 7, 7, false, 4, "", "👍", "👍"},
		{`{"update_id":8,"message_reaction":{"chat":{"id":7,"type":"private"},"message_id":4,"user":{"id":7},"old_reaction":[{"type":"emoji"}],"new_reaction":[{"type":"emoji","emoji":"❤"},{"type":"emoji","emoji":"❤"}]}}`,
			2, "channel", 7, 7, false, -1, "", "", "❤"},
		{`{"update_id":9,"callback_query":null,"edited_message":"x"}`, 1, "private", 0, 7, false, 1, "\xff", "", ""},
		{`{"update_id":10,"message_reaction":{"old_reaction":"x"}}`, 2, "private", 7, 7, true, 1, "", "", "🎉"},
	} {
		f.Add([]byte(s.body), s.kind, s.chatType, s.chatID, s.fromID, s.isBot, s.msgID, s.text, s.emojiOld, s.emojiNew)
	}
	h := newFuzzHost(f)
	f.Fuzz(func(t *testing.T, body []byte, kind uint8, chatType string, chatID, fromID int64, isBot bool, msgID int,
		text, emojiOld, emojiNew string) {
		h.check(t, body, false)
		made := madeUpdate(kind, chatType, chatID, fromID, isBot, msgID, text, emojiOld, emojiNew)
		h.check(t, made, true)
	})
}

// madeUpdate is a tap, an edit or a reaction update of the arguments.
func madeUpdate(kind uint8, chatType string, chatID, fromID int64, isBot bool, msgID int, text, emojiOld, emojiNew string) []byte {
	chat := map[string]any{"id": chatID, "type": chatType}
	from := map[string]any{"id": fromID, "is_bot": isBot, "first_name": "F"}
	reaction := func(e string) []any {
		if e == "" {
			return []any{}
		}
		return []any{map[string]any{"type": "emoji", "emoji": e}}
	}
	upd := map[string]any{"update_id": 1}
	switch kind % 3 {
	case 0:
		upd["callback_query"] = map[string]any{"id": "q" + strconv.Itoa(msgID), "from": from, "chat_instance": "c", "data": text,
			"message": map[string]any{"message_id": msgID, "date": 1, "chat": chat}}
	case 1:
		upd["edited_message"] = map[string]any{"message_id": msgID, "date": 1, "edit_date": 2, "chat": chat, "from": from, "text": text}
	default:
		upd["message_reaction"] = map[string]any{"chat": chat, "message_id": msgID, "user": from, "date": 1,
			"old_reaction": reaction(emojiOld), "new_reaction": reaction(emojiNew)}
	}
	raw, err := json.Marshal(upd)
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return raw
}

// check posts body and checks what reached the core against it; exact
// says the body is well formed, so what it asks for must be taken.
func (h *fuzzHost) check(t *testing.T, body []byte, exact bool) {
	t.Helper()
	taps, changes, reactions := len(h.box.Taps()), len(h.box.Changes()), len(h.box.Reactions())
	status := h.post(body)
	gotTaps, gotChanges, gotReactions := h.box.Taps()[taps:], h.box.Changes()[changes:], h.box.Reactions()[reactions:]
	msgs := h.box.Take()
	if status != http.StatusOK && (status < 400 || status >= 500) || len(gotTaps) > 1 || len(gotChanges) > 1 {
		t.Fatalf("%q: %d, taps %+v, changes %+v", body, status, gotTaps, gotChanges)
	}
	var ev wireEvent
	decoded := json.Unmarshal(body, &ev) == nil
	if exact && !decoded {
		t.Fatalf("%s does not decode", body)
	}
	if !decoded && len(gotTaps)+len(gotChanges)+len(gotReactions) > 0 {
		t.Fatalf("%q does not decode, but the core got taps %+v, changes %+v, reactions %+v", body, gotTaps, gotChanges, gotReactions)
	}
	if decoded && (ev.CallbackQuery != nil || ev.EditedMessage != nil || ev.MessageReaction != nil) && len(msgs) > 0 {
		t.Fatalf("%q reached the core as a message: %+v", body, msgs)
	}
	if decoded {
		h.checkTap(t, body, ev, gotTaps, exact)
		checkChange(t, body, ev, gotChanges, exact)
		checkReactions(t, body, ev, gotReactions, exact)
	}
}

func (h *fuzzHost) checkTap(t *testing.T, body []byte, ev wireEvent, got []core.InboundMessage, exact bool) {
	t.Helper()
	q := ev.CallbackQuery
	want := q != nil && q.ID != "" && q.Data != "" && q.InlineMessageID == "" && q.Message != nil && q.Message.ID != 0 &&
		q.Message.Chat.ID != 0 && q.Message.Chat.Type == "private" && q.From.ID != 0 && !q.From.IsBot && q.From.ID != h.srv.BotID()
	if len(got) == 0 {
		if exact && want {
			t.Fatalf("%s: the tap did not reach the core", body)
		}
		return
	}
	m := got[0]
	switch {
	case !want:
		t.Fatalf("%q reached the core as tap %+v", body, m)
	case m.Tap == nil || m.Tap.Data != q.Data || m.Tap.ID != q.ID || m.Tap.MessageID != strconv.Itoa(q.Message.ID):
		t.Fatalf("%q: tap %+v", body, m.Tap)
	case m.Platform != Platform || !m.Direct || m.ChannelThreadID != strconv.FormatInt(q.Message.Chat.ID, 10) ||
		m.ChannelUserID != strconv.FormatInt(q.From.ID, 10) || m.SentAt.IsZero():
		t.Fatalf("%q: tap message %+v", body, m)
	}
}

func checkChange(t *testing.T, body []byte, ev wireEvent, got []core.MessageChange, exact bool) {
	t.Helper()
	e := ev.EditedMessage
	text := ""
	if e != nil {
		text = e.Text
		if text == "" {
			text = e.Caption
		}
	}
	want := ev.CallbackQuery == nil && e != nil && e.Chat.Type == "private" && e.From != nil && !e.From.IsBot && text != ""
	if len(got) == 0 {
		if exact && want {
			t.Fatalf("%s: the edit did not reach the core", body)
		}
		return
	}
	c := got[0]
	switch {
	case !want:
		t.Fatalf("%q reached the core as change %+v", body, c)
	case c.Platform != Platform || c.Deleted || c.Text != text || c.PlatformMessageID != strconv.Itoa(e.ID) ||
		c.ChannelThreadID != strconv.FormatInt(e.Chat.ID, 10) || c.ChannelUserID != strconv.FormatInt(e.From.ID, 10) || c.At.IsZero():
		t.Fatalf("%q: change %+v", body, c)
	}
}

func checkReactions(t *testing.T, body []byte, ev wireEvent, got []core.Reaction, exact bool) {
	t.Helper()
	r := ev.MessageReaction
	ok := ev.CallbackQuery == nil && ev.EditedMessage == nil && r != nil && r.Chat.Type == "private" && r.User != nil && !r.User.IsBot
	if !ok {
		if len(got) > 0 {
			t.Fatalf("%q reached the core as reactions %+v", body, got)
		}
		return
	}
	emoji := func(rs []wireReaction) []string {
		var out []string
		for _, x := range rs {
			if x.Type == "emoji" && x.Emoji != "" {
				out = append(out, x.Emoji)
			}
		}
		return out
	}
	before, after := emoji(r.OldReaction), emoji(r.NewReaction)
	for _, c := range got {
		in, other := after, before
		if c.Removed {
			in, other = before, after
		}
		if c.Platform != Platform || !slices.Contains(in, c.Emoji) || slices.Contains(other, c.Emoji) || c.MessageID != strconv.Itoa(r.MessageID) ||
			c.ChannelThreadID != strconv.FormatInt(r.Chat.ID, 10) || c.ChannelUserID != strconv.FormatInt(r.User.ID, 10) {
			t.Fatalf("%q: reaction %+v", body, c)
		}
	}
	for _, e := range after {
		if exact && !slices.Contains(before, e) && !slices.ContainsFunc(got, func(c core.Reaction) bool { return c.Emoji == e && !c.Removed }) {
			t.Fatalf("%s: %s added did not reach the core: %+v", body, e, got)
		}
	}
	for _, e := range before {
		if exact && !slices.Contains(after, e) && !slices.ContainsFunc(got, func(c core.Reaction) bool { return c.Emoji == e && c.Removed }) {
			t.Fatalf("%s: %s taken back did not reach the core: %+v", body, e, got)
		}
	}
}
