package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/adapters/slack/mrkdwn"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// fuzzRig is an adapter in events mode against a fake, its routes on mux
// and its host keeping all it is handed.
type fuzzRig struct {
	srv  *slacktest.Server
	mux  *http.ServeMux
	host *changeHost
}

func newFuzzRig(f *testing.F) *fuzzRig {
	srv := slacktest.NewServer(f)
	a := New()
	a.Mode = ModeEvents
	a.BotToken = config.Secret(srv.BotToken())
	a.SigningSecret = config.Secret(srv.SigningSecret())
	a.APIURL = srv.APIURL()
	a.serverBackoff = time.Millisecond
	if err := a.Provision(context.Background(), core.Env{Logger: (&coretest.Logs{}).Logger()}); err != nil {
		f.Fatal(err)
	}
	if err := a.Validate(); err != nil {
		f.Fatal(err)
	}
	host := &changeHost{Recorder: adaptertest.NewRecorder()}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := a.Start(ctx, host); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		_ = a.Stop(ctx)
	})
	mux := http.NewServeMux()
	a.Mount(mux)
	return &fuzzRig{srv: srv, mux: mux, host: host}
}

// post sends body to path, signed with secret ("" unsigned), and returns
// the status with what reached the core meanwhile.
func (r *fuzzRig) post(path, contentType, secret string, body []byte) (int, []core.Reaction, []core.MessageChange) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	if secret != "" {
		slacktest.SignRequest(req, body, secret, time.Now())
	}
	r.mux.ServeHTTP(rec, req)
	r.host.Take() // messages: FuzzEvents' business
	r.host.mu.Lock()
	defer r.host.mu.Unlock()
	rs, cs := r.host.reactions, r.host.changes
	r.host.reactions, r.host.changes = nil, nil
	return rec.Code, rs, cs
}

// wireChange is the part of an event the oracle reads.
type wireChange struct {
	Type        string `json:"type"`
	SubType     string `json:"subtype"`
	Channel     string `json:"channel"`
	ChannelType string `json:"channel_type"`
	DeletedTS   string `json:"deleted_ts"`
	User        string `json:"user"`
	Reaction    string `json:"reaction"`
	Item        struct {
		Type    string `json:"type"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	} `json:"item"`
	Message  *wireMsg `json:"message"`
	Previous *wireMsg `json:"previous_message"`
}

type wireMsg struct {
	User    string `json:"user"`
	BotID   string `json:"bot_id"`
	Text    string `json:"text"`
	TS      string `json:"ts"`
	SubType string `json:"subtype"`
}

// FuzzChangeEvents checks the adapter's decoding of users' reactions
// (reaction_added, reaction_removed) and edits and deletions
// (message_changed, message_deleted) through its Events API endpoint
// (Socket Mode hands the same payloads to the same decoding). Unsigned, a
// body is a 401 and nothing reaches the core; signed, never a 5xx, at
// most one reaction or change, and only as the oracle reads the event: a
// reaction by someone other than the bot on a message in a DM (a D…
// channel), its emoji the Unicode of a Slack name the adapter maps or the
// name; an edit that changed the text, or a deletion, in a DM
// (channel_type im), of a message no bot wrote, with the message's ts and
// its new text read from mrkdwn. The same holds for an event made of the
// other arguments.
func FuzzChangeEvents(f *testing.F) {
	seeds := []struct {
		body                                       string
		typ, sub, channel, chType, user, botID, ts string
		text, prev, reaction                       string
	}{
		{`{"type":"event_callback","event_id":"Ev1","event":{"type":"reaction_added","user":"U0ADA00001","reaction":"+1","item_user":"U0BOT00001","item":{"type":"message","channel":"D0ADA00001","ts":"1700000000.000100"},"event_ts":"1700000001.000200"}}`,
			"reaction_added", "", "D0ADA00001", "", "U0ADA00001", "", "1700000000.000100", "", "", "thumbsup"},
		{`{"type":"event_callback","event_id":"Ev2","event":{"type":"reaction_removed","user":"U0ADA00001","reaction":"partyparrot::skin-tone-3","item":{"type":"message","channel":"D0","ts":"1.2"}}}`,
			"reaction_removed", "", "C0GENERAL1", "", "U0ADA00001", "", "1.2", "", "", "heart::skin-tone-9"},
		{`{"type":"event_callback","event_id":"Ev3","event":{"type":"reaction_added","user":"U1","reaction":"tada","item":{"type":"file","file":"F1"}}}`,
			"reaction_added", "", "D0", "", "U0BOT00001", "", "1.2", "", "", "tada"},
		{`{"type":"event_callback","event_id":"Ev4","event":{"type":"message","subtype":"message_changed","channel":"D0","channel_type":"im","ts":"1.5","message":{"type":"message","user":"U1","text":"new &amp; <@U2>","ts":"1.2","edited":{"user":"U1","ts":"1.5"}},"previous_message":{"text":"old","ts":"1.2"}}}`,
			"message", "message_changed", "D0", "im", "U1", "", "1.2", "new &lt;b&gt;", "old", ""},
		{`{"type":"event_callback","event_id":"Ev5","event":{"type":"message","subtype":"message_changed","channel":"D0","channel_type":"im","message":{"user":"U1","text":"same","ts":"1.2","attachments":[{"id":1}]},"previous_message":{"text":"same"}}}`,
			"message", "message_changed", "D0", "im", "U1", "", "1.2", "same", "same", ""},
		{`{"type":"event_callback","event_id":"Ev6","event":{"type":"message","subtype":"message_deleted","channel":"D0","channel_type":"im","deleted_ts":"1.2","previous_message":{"user":"U1","text":"gone","ts":"1.2"}}}`,
			"message", "message_deleted", "D0", "im", "U1", "", "1.2", "", "gone", ""},
		{`{"type":"event_callback","event_id":"Ev7","event":{"type":"message","subtype":"message_deleted","channel":"D0","channel_type":"im","deleted_ts":"1.2","previous_message":{"user":"U0BOT00001","bot_id":"B0BOT00001","text":"mine"}}}`,
			"message", "message_changed", "D0", "im", "U1", "B1", "1.2", "bot edit", "", ""},
		{`{"type":"event_callback","event_id":"Ev8","event":{"type":"message","subtype":"message_changed","channel":"D0","channel_type":"im","message":null}}`,
			"message", "message_deleted", "D0", "channel", "U1", "", "", "", "", ""},
		{`{"type":"event_callback","event_id":"Ev9","event":{"type":"reaction_added","item":"nope"}}`, "reaction_added", "", "", "", "", "", "", "", "", ""},
		{`not json`, "message", "message_changed", "D0", "im", "", "", "1.2", "edit without author", "", ""},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), s.typ, s.sub, s.channel, s.chType, s.user, s.botID, s.ts, s.text, s.prev, s.reaction)
	}
	rig := newFuzzRig(f)
	nonce, seq := time.Now().UnixNano(), 0
	const jsonType = "application/json"
	f.Fuzz(func(t *testing.T, body []byte, typ, sub, channel, chType, user, botID, ts, text, prev, reaction string) {
		if status, rs, cs := rig.post(EventsPath, jsonType, "", body); status != http.StatusUnauthorized || len(rs)+len(cs) > 0 {
			t.Fatalf("unsigned: %d, and the core got %+v %+v", status, rs, cs)
		}
		status, rs, cs := rig.post(EventsPath, jsonType, rig.srv.SigningSecret(), body)
		if status >= 500 || len(rs)+len(cs) > 1 {
			t.Fatalf("%q: %d, and the core got %+v %+v", body, status, rs, cs)
		}
		var cb struct {
			Event *wireChange `json:"event"`
		}
		if len(rs)+len(cs) == 1 && (json.Unmarshal(body, &cb) != nil || cb.Event == nil) {
			t.Fatalf("%q is no event, but the core got %+v %+v", body, rs, cs)
		}
		if len(rs)+len(cs) == 1 {
			checkChange(t, rig.srv.BotUserID(), cb.Event, rs, cs, true)
		}

		seq++
		made := map[string]any{"type": typ, "channel": channel, "channel_type": chType, "ts": "1700000009.000100"}
		if strings.HasPrefix(typ, "reaction") {
			made = map[string]any{"type": typ, "user": user, "reaction": reaction,
				"item": map[string]any{"type": "message", "channel": channel, "ts": ts}}
		}
		msg := map[string]any{"user": user, "text": text, "ts": ts}
		if botID != "" {
			msg["bot_id"] = botID
		}
		if sub != "" {
			made["subtype"] = sub
			made["message"], made["previous_message"], made["deleted_ts"] = msg, map[string]any{"user": user, "text": prev, "ts": ts}, ts
			if sub == wire.SubtypeDeleted {
				made["previous_message"] = msg
			}
		}
		raw, err := json.Marshal(map[string]any{"type": "event_callback", "event_id": fmt.Sprintf("EvFuzz%d.%d", nonce, seq), "event": made})
		if err != nil {
			t.Fatal(err)
		}
		status, rs, cs = rig.post(EventsPath, jsonType, rig.srv.SigningSecret(), raw)
		if status != http.StatusOK || json.Unmarshal(raw, &cb) != nil {
			t.Fatalf("%s: %d", raw, status)
		}
		checkChange(t, rig.srv.BotUserID(), cb.Event, rs, cs, false)
	})
}

// checkChange checks what reached the core of event e (at most one
// reaction or change) against what the oracle reads of it; handed says
// that something reached it, and only its fields are checked.
func checkChange(t *testing.T, botUser string, e *wireChange, rs []core.Reaction, cs []core.MessageChange, handed bool) {
	t.Helper()
	isReaction := (e.Type == "reaction_added" || e.Type == "reaction_removed") && e.Item.Type == "message" &&
		strings.HasPrefix(e.Item.Channel, "D") && e.User != "" && e.User != botUser && e.Item.TS != "" && e.Reaction != ""
	var m *wireMsg
	id := ""
	switch e.SubType {
	case wire.SubtypeChanged:
		m = e.Message
		if m != nil {
			id = m.TS
		}
	case wire.SubtypeDeleted:
		m, id = e.Previous, e.DeletedTS
	}
	isChange := e.Type == "message" && id != "" && e.ChannelType == "im" && e.Channel != "" &&
		(m == nil || (m.BotID == "" && (m.User == "" || m.User != botUser))) &&
		(e.SubType == wire.SubtypeDeleted || (m.User != "" && (m.SubType == "" || m.SubType == "file_share") &&
			(e.Previous == nil || e.Previous.Text != m.Text)))
	if !handed && (isReaction != (len(rs) == 1) || isChange != (len(cs) == 1) || len(rs)+len(cs) > 1) {
		t.Fatalf("%+v: want reaction %t change %t, the core got %+v %+v", e, isReaction, isChange, rs, cs)
	}
	switch {
	case len(rs) == 1:
		r := rs[0]
		want := core.Reaction{Platform: Platform, ChannelThreadID: e.Item.Channel, ChannelUserID: e.User,
			MessageID: e.Item.TS, Emoji: wire.EmojiOf(e.Reaction), Removed: e.Type == "reaction_removed", At: r.At}
		if !isReaction || r != want {
			t.Fatalf("%+v became %+v", e, r)
		}
	case len(cs) == 1:
		c := cs[0]
		want := core.MessageChange{Platform: Platform, ChannelThreadID: e.Channel, PlatformMessageID: id,
			Deleted: e.SubType == wire.SubtypeDeleted, At: c.At}
		if m != nil {
			want.ChannelUserID = m.User
			if !want.Deleted {
				want.Text = mrkdwn.ToText(m.Text)
			}
		}
		if !isChange || c != want {
			t.Fatalf("%+v became %+v, want %+v", e, c, want)
		}
	}
}
