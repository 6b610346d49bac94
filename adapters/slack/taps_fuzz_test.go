package slack

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/parleybot/parley/core"
)

// FuzzInteractivity checks the adapter's decoding of interaction payloads
// (block_actions: a tap on one of the bot's buttons) through its signed
// POST /webhooks/slack/interactivity (Socket Mode hands the same payloads
// to the same decoding). On form as it comes, and on a form whose payload
// is payload: unsigned, a 401 and no tap; signed, never a 5xx, at most one
// tap, and only as the oracle reads the payload: block_actions in a DM (a
// D… channel, the container's or the channel's), with a user, the
// message's ts and a button value; the tap carries that user, channel,
// value, ts and the button's label. A payload made of the other arguments
// is taken exactly when it is such a tap.
func FuzzInteractivity(f *testing.F) {
	const tap = `{"type":"block_actions","trigger_id":"1.2.abc","user":{"id":"U0ADA00001"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"D0ADA00001"},"channel":{"id":"D0ADA00001"},"message":{"text":"A or B?","blocks":[]},"actions":[{"action_id":"choice_0","value":"v0","action_ts":"1700000001.000100","text":{"type":"plain_text","text":"A"}}]}`
	for _, s := range []struct {
		form, payload                        string
		typ, channel, user, ts, value, label string
	}{
		{"payload=" + url.QueryEscape(tap), tap, "block_actions", "D0ADA00001", "U0ADA00001", "1700000000.000100", "v0", "A"},
		{"payload=%7B%7D", `{"type":"block_actions","channel":{"id":"C0GENERAL1"},"user":{"id":"U1"},"container":{"message_ts":"1.2"},"actions":[{"value":"v"}]}`,
			"block_actions", "C0GENERAL1", "U1", "1.2", "v", "B"},
		{"payload=not+json", `{"type":"view_submission","user":{"id":"U1"}}`, "view_submission", "D0", "U1", "1.2", "v", ""},
		{"nopayload=1", `{"type":"block_actions","container":{"channel_id":"D0","message_ts":"1.2"},"user":{"id":"U1"},"actions":[]}`,
			"block_actions", "D0", "", "1.2", "", "x"},
		{"payload=%ZZ", `{"type":"block_actions","actions":"nope"}`, "block_actions", "D0", "U1", "", "v", "\xff"},
	} {
		f.Add(s.form, s.payload, s.typ, s.channel, s.user, s.ts, s.value, s.label)
	}
	rig := newFuzzRig(f)
	const formType = "application/x-www-form-urlencoded"
	post := func(t *testing.T, form string) (int, []core.InboundMessage) {
		t.Helper()
		for _, secret := range []string{"", "not-" + rig.srv.SigningSecret()} {
			if status, _, _ := rig.post(InteractivityPath, formType, secret, []byte(form)); status != http.StatusUnauthorized || len(rig.host.takeTaps()) > 0 {
				t.Fatalf("bad signature: %d, and the core got a tap", status)
			}
		}
		status, _, _ := rig.post(InteractivityPath, formType, rig.srv.SigningSecret(), []byte(form))
		taps := rig.host.takeTaps()
		if status >= 500 || len(taps) > 1 {
			t.Fatalf("%q: %d, and the core got %+v", form, status, taps)
		}
		return status, taps
	}
	f.Fuzz(func(t *testing.T, form, payload, typ, channel, user, ts, value, label string) {
		if _, taps := post(t, form); len(taps) == 1 {
			vals, err := url.ParseQuery(form)
			if err != nil {
				t.Fatalf("%q is no form, but the core got %+v", form, taps)
			}
			checkTap(t, vals.Get("payload"), taps[0])
		}
		if _, taps := post(t, "payload="+url.QueryEscape(payload)); len(taps) == 1 {
			checkTap(t, payload, taps[0])
		}
		made, err := json.Marshal(map[string]any{"type": typ, "trigger_id": "1.2.fuzz", "user": map[string]any{"id": user},
			"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel},
			"message":   map[string]any{"text": "Q?"},
			"actions":   []any{map[string]any{"action_id": "choice_0", "value": value, "text": map[string]any{"type": "plain_text", "text": label}}}})
		if err != nil {
			t.Fatal(err)
		}
		status, taps := post(t, "payload="+url.QueryEscape(string(made)))
		if status != http.StatusOK {
			t.Fatalf("%s: %d", made, status)
		}
		if _, _, want := tapWanted(string(made)); want != (len(taps) == 1) {
			t.Fatalf("%s: want a tap %t, the core got %+v", made, want, taps)
		}
		if len(taps) == 1 {
			checkTap(t, string(made), taps[0])
		}
	})
}

// wireTap is the part of a block_actions payload the oracle reads.
type wireTap struct {
	Type string `json:"type"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Container struct {
		MessageTS string `json:"message_ts"`
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Actions []struct {
		Value string `json:"value"`
		Text  struct {
			Text string `json:"text"`
		} `json:"text"`
	} `json:"actions"`
}

// tapWanted reports whether payload is a tap the core should get, with
// the channel it is in.
func tapWanted(payload string) (p wireTap, channel string, want bool) {
	if json.Unmarshal([]byte(payload), &p) != nil {
		return p, "", false
	}
	channel = p.Container.ChannelID
	if channel == "" {
		channel = p.Channel.ID
	}
	return p, channel, p.Type == "block_actions" && strings.HasPrefix(channel, "D") && p.User.ID != "" &&
		p.Container.MessageTS != "" && len(p.Actions) > 0 && p.Actions[0].Value != ""
}

// checkTap checks m, which reached the core, against the payload it came
// from.
func checkTap(t *testing.T, payload string, m core.InboundMessage) {
	t.Helper()
	p, channel, want := tapWanted(payload)
	switch {
	case !want:
		t.Fatalf("%q is no tap in a DM, but the core got %+v", payload, m)
	case m.Tap == nil || m.Platform != Platform || !m.Direct:
		t.Fatalf("%q: not a Slack tap: %+v", payload, m)
	case m.ChannelThreadID != channel || m.ChannelUserID != p.User.ID:
		t.Fatalf("%q: tap in %q by %q", payload, m.ChannelThreadID, m.ChannelUserID)
	case m.Tap.Data != p.Actions[0].Value || m.Tap.MessageID != p.Container.MessageTS || m.Text != p.Actions[0].Text.Text:
		t.Fatalf("%q: tap %+v, text %q", payload, *m.Tap, m.Text)
	}
}
