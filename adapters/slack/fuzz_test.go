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
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
)

// wireCallback is the part of an Events API payload the oracle reads.
type wireCallback struct {
	Type  string `json:"type"`
	Event *struct {
		Type        string `json:"type"`
		Channel     string `json:"channel"`
		ChannelType string `json:"channel_type"`
		User        string `json:"user"`
		Text        string `json:"text"`
		SubType     string `json:"subtype"`
		BotID       string `json:"bot_id"`
	} `json:"event"`
}

// FuzzEvents checks the Slack adapter's inbound decoding through its
// Events API endpoint (POST /webhooks/slack/events, signed with the signing
// secret; Socket Mode hands the same payloads to the same decoding), on
// body as it comes and on an event_callback made of the other arguments.
// Whatever the body: unsigned, it is a 401 and nothing reaches the core;
// signed, the answer is 200 (or a 4xx), never a 5xx while the core takes
// everything; at most one message reaches the core, and only a user's
// message in a DM ("channel_type": "im", no subtype, no bot_id), with the
// event's channel and user and its text: as written, or with Slack's
// mrkdwn (mentions, links, entities) read back when it has any. The made event is taken exactly when it is such a
// message from someone other than the bot.
func FuzzEvents(f *testing.F) {
	for _, s := range []struct {
		body                                   string
		channelType, channel, user, sub, botID string
		text                                   string
	}{
		{`{"type":"event_callback","event_id":"Ev1","event":{"type":"message","channel":"D0ADA00001","user":"U0ADA00001","text":"hi","ts":"1700000000.000100","channel_type":"im"}}`,
			"im", "D0ADA00001", "U0ADA00001", "", "", "hi"},
		{`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","channel":"C0GENERAL1","user":"U0ADA00001","text":"in a channel","ts":"1.2","channel_type":"channel"}}`,
			"channel", "C0GENERAL1", "U0ADA00001", "", "", "in a channel"},
		{`{"type":"event_callback","event_id":"Ev3","event":{"type":"message","channel":"G0","user":"U1","text":"mpim","channel_type":"mpim"}}`,
			"mpim", "G0", "U1", "", "", "mpim"},
		{`{"type":"event_callback","event_id":"Ev4","event":{"type":"message","subtype":"message_changed","channel":"D0","channel_type":"im","message":{"text":"edited","user":"U1"}}}`,
			"im", "D0", "U1", "message_changed", "", "edited"},
		{`{"type":"event_callback","event_id":"Ev5","event":{"type":"message","channel":"D0","user":"U1","bot_id":"B1","text":"bot","channel_type":"im"}}`,
			"im", "D0", "U1", "", "B1", "bot"},
		{`{"type":"event_callback","event_id":"Ev6","event":{"type":"app_mention","channel":"C0","user":"U1","text":"<@U0BOT> hi"}}`,
			"im", "D0", "", "", "", "no user"},
		{`{"type":"event_callback","event_id":"Ev7","event":{"type":"message","channel":"D0","user":"U1","text":"&lt;b&gt; &amp; <@U2|ada> <https://x.y|link> <#C1|general> <!here>","channel_type":"im"}}`,
			"im", "D0", "U1", "", "", "&lt;&amp;&gt; <@U2> <mailto:a@b.c|a@b.c> <!subteam^S1|@team> <"},
		{`{"type":"url_verification","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, "im", "", "U1", "", "", "no channel"},
		{`{"type":"app_rate_limited","minute_rate_limited":1518467820}`, "IM", "D0", "U1", "", "", "case"},
		{`{"type":"event_callback","event":"nope"}`, "im", "D0", "U1", "", "", "\xff\x00"},
		{`{"type":"event_callback","event_id":"Ev8","event":{"type":"message","channel":"D0","user":"U1","channel_type":"im","attachments":5}}`,
			"im", "D0", "U1", "", "", ""},
		{`not json`, "", "", "", "", "", ""},
	} {
		f.Add([]byte(s.body), s.channelType, s.channel, s.user, s.sub, s.botID, s.text)
	}
	srv := slacktest.NewServer(f)
	a := New()
	a.Mode = ModeEvents
	a.BotToken = config.Secret(srv.BotToken())
	a.AppToken = config.Secret(srv.AppToken())
	a.SigningSecret = config.Secret(srv.SigningSecret())
	a.APIURL = srv.APIURL()
	a.serverBackoff = time.Millisecond
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
	post := func(secret string, body []byte) (int, []core.InboundMessage) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, EventsPath, bytes.NewReader(body))
		if secret != "" {
			slacktest.SignRequest(req, body, secret, time.Now())
		}
		mux.ServeHTTP(rec, req)
		return rec.Code, box.Take()
	}
	// Each made event gets an id of its own, so that the adapter's
	// de-duplication of Slack's retries never hides one.
	nonce, seq := time.Now().UnixNano(), 0

	f.Fuzz(func(t *testing.T, body []byte, channelType, channel, user, sub, botID, text string) {
		for _, secret := range []string{"", "not-" + srv.SigningSecret()} {
			if status, got := post(secret, body); status != http.StatusUnauthorized || len(got) > 0 {
				t.Fatalf("bad signature: %d, and the core got %+v", status, got)
			}
		}
		status, got := post(srv.SigningSecret(), body)
		if status >= 500 || len(got) > 1 {
			t.Fatalf("%q: %d, and the core got %+v", body, status, got)
		}
		if len(got) == 1 {
			var cb wireCallback
			if err := json.Unmarshal(body, &cb); err != nil || cb.Type != "event_callback" || cb.Event == nil || cb.Event.Type != "message" {
				t.Fatalf("%q reached the core as %+v, but is not a message event (%v)", body, got[0], err)
			}
			e := cb.Event
			checkTaken(t, got[0], e.ChannelType, e.SubType, e.BotID, e.Channel, e.User, e.Text)
		}

		seq++
		event := map[string]any{"type": "message", "channel": channel, "user": user, "text": text,
			"ts": "1700000000.000100", "channel_type": channelType}
		if sub != "" {
			event["subtype"] = sub
		}
		if botID != "" {
			event["bot_id"] = botID
		}
		made, err := json.Marshal(map[string]any{"type": "event_callback", "event_id": fmt.Sprintf("EvFuzz%d.%d", nonce, seq), "event": event})
		if err != nil {
			t.Fatal(err)
		}
		status, got = post(srv.SigningSecret(), made)
		var cb wireCallback
		if status != http.StatusOK || len(got) > 1 || json.Unmarshal(made, &cb) != nil {
			t.Fatalf("%s: %d, and the core got %+v", made, status, got)
		}
		// The fields as JSON carries them (valid UTF-8).
		e := cb.Event
		want := e.ChannelType == "im" && e.SubType == "" && e.BotID == "" && e.User != "" && e.Channel != "" &&
			e.User != srv.BotUserID()
		if want != (len(got) == 1) {
			t.Fatalf("%s: want taken %t, the core got %+v", made, want, got)
		}
		if want {
			checkTaken(t, got[0], e.ChannelType, e.SubType, e.BotID, e.Channel, e.User, e.Text)
		}
	})
}

// checkTaken checks a message that reached the core against the event it
// came from.
func checkTaken(t *testing.T, m core.InboundMessage, channelType, sub, botID, channel, user, text string) {
	t.Helper()
	switch {
	case channelType != "im" || sub != "" || botID != "":
		t.Fatalf("a message in a %q channel (subtype %q, bot %q) reached the core: %+v", channelType, sub, botID, m)
	case m.Platform != Platform || !m.Direct:
		t.Fatalf("not a Slack DM: %+v", m)
	case m.ChannelThreadID == "" || m.ChannelThreadID != channel:
		t.Fatalf("channel %q became thread %q", channel, m.ChannelThreadID)
	case m.ChannelUserID == "" || m.ChannelUserID != user:
		t.Fatalf("user %q became %q", user, m.ChannelUserID)
	case !strings.ContainsAny(text, "<&") && m.Text != text:
		t.Fatalf("text %q, without mrkdwn, became %q", text, m.Text)
	case m.Text != mrkdwn.ToText(text):
		t.Fatalf("text %q became %q, want %q", text, m.Text, mrkdwn.ToText(text))
	}
}
