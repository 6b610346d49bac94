package discord

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// ackCounter answers every request 204 and counts the interaction
// callbacks (acknowledgements of taps) among them.
type ackCounter struct{ acks atomic.Int64 }

func (c *ackCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasPrefix(r.URL.Path, "/api/v9/interactions/") && strings.HasSuffix(r.URL.Path, "/callback") {
		c.acks.Add(1)
	}
	return &http.Response{StatusCode: http.StatusNoContent, Body: io.NopCloser(strings.NewReader("")), Header: http.Header{}, Request: r}, nil
}

// gatewayEvents are the events FuzzGatewayChanges hands the adapter, by
// kind%5.
var gatewayEvents = []string{"INTERACTION_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_REACTION_ADD", "MESSAGE_REACTION_REMOVE"}

// wireChange is the part of a tap, update, delete or reaction payload the
// oracle reads.
type wireChange struct {
	ID        string `json:"id"`
	Type      int    `json:"type"`
	Token     string `json:"token"`
	GuildID   string `json:"guild_id"`
	ChannelID string `json:"channel_id"`
	MessageID string `json:"message_id"`
	UserID    string `json:"user_id"`
	Content   string `json:"content"`
	User      *struct {
		ID string `json:"id"`
	} `json:"user"`
	Author *struct {
		ID  string `json:"id"`
		Bot bool   `json:"bot"`
	} `json:"author"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
	Data *struct {
		CustomID string `json:"custom_id"`
	} `json:"data"`
	Emoji struct {
		Name string `json:"name"`
	} `json:"emoji"`
}

// FuzzGatewayChanges checks the decoding of a button tap
// (INTERACTION_CREATE of a message component), a user's edit
// (MESSAGE_UPDATE) and deletion (MESSAGE_DELETE) and reactions
// (MESSAGE_REACTION_ADD and _REMOVE), on payload as it comes (as event
// kind%5) and on an event made of the other arguments. It never panics;
// nothing from a server (a guild_id) reaches the core; a tap reaches
// HandleTap only with snowflake ids, a token, a user, a message and a
// custom_id, as those say, and every button tap with an id and a token is
// acknowledged once; an edit reaches HandleChange only from a user who is
// not a bot, with content; a deletion with its message's ids; a reaction
// only from a user who is not the bot, with an emoji. The made event is
// taken exactly when all of that holds.
func FuzzGatewayChanges(f *testing.F) {
	const (
		ch, user, msg = "200000000000000001", "100000000000000001", "300000000000000001"
		tap           = `{"id":"500000000000000001","application_id":"9","type":3,"token":"tok","channel_id":"` + ch + `","user":{"id":"` + user + `"},"message":{"id":"` + msg + `","channel_id":"` + ch + `","components":[]},"data":{"custom_id":"q1.0","component_type":2}}`
	)
	for _, s := range []struct {
		payload                           string
		kind                              uint8
		guildID, channelID, userID, msgID string
		bot                               bool
		typ                               uint8
		text                              string
	}{
		{tap, 0, "", ch, user, msg, false, 3, "q1.0"},
		{`{"id":"5","type":3,"token":"t","guild_id":"4","channel_id":"2","member":{"user":{"id":"1"}},"message":{"id":"3"},"data":{"custom_id":"x"}}`, 0, "4", ch, user, msg, false, 3, "x"},
		{`{"id":"5","type":2,"token":"t","channel_id":"2","user":{"id":"1"},"data":{"name":"cmd"}}`, 0, "", ch, user, msg, false, 2, "cmd"},
		{`{"id":"5","type":3,"channel_id":"2","user":{"id":"1"},"message":{"id":"3"},"data":{"custom_id":""}}`, 0, "", "2", "x", msg, false, 3, ""},
		{`{"id":"` + msg + `","channel_id":"` + ch + `","author":{"id":"` + user + `"},"content":"edited","edited_timestamp":"2026-01-02T03:04:05.000000+00:00"}`, 1, "", ch, user, msg, false, 0, "edited"},
		{`{"id":"3","channel_id":"2","author":{"id":"1","bot":true},"content":"bot"}`, 1, "", ch, user, msg, true, 0, "bot"},
		{`{"id":"3","channel_id":"2","guild_id":"4","author":{"id":"1"},"content":"server"}`, 1, "4", ch, user, "../3", false, 0, "server"},
		{`{"id":"` + msg + `","channel_id":"` + ch + `"}`, 2, "", ch, user, msg, false, 0, ""},
		{`{"id":"3","channel_id":"2","guild_id":"4"}`, 2, "4", "2", user, "3", false, 0, ""},
		{`{"user_id":"` + user + `","channel_id":"` + ch + `","message_id":"` + msg + `","emoji":{"name":"👍"}}`, 3, "", ch, user, msg, false, 0, "👍"},
		{`{"user_id":"` + fuzzBotID + `","channel_id":"2","message_id":"3","emoji":{"name":"👍"}}`, 4, "", ch, fuzzBotID, msg, false, 0, "🔥"},
		{`{"user_id":"1","channel_id":"2","message_id":"3","emoji":{"id":"7","name":null}}`, 4, "", ch, user, msg, false, 0, ""},
		{`null`, 0, "", "", "", "", false, 3, "\xff"},
		{`{"type":"x"}`, 1, "", "٣", user, msg, false, 0, " "},
	} {
		f.Add([]byte(s.payload), s.kind, s.guildID, s.channelID, s.userID, s.msgID, s.bot, s.typ, s.text)
	}
	a := New()
	if err := a.Provision(context.Background(), core.Env{Logger: (&coretest.Logs{}).Logger()}); err != nil {
		f.Fatal(err)
	}
	box := adaptertest.NewRecorder()
	a.botID, a.handler, a.runCtx = fuzzBotID, box, context.Background()
	counter := &ackCounter{}
	s, err := discordgo.New("Bot " + fuzzToken)
	if err != nil {
		f.Fatal(err)
	}
	s.Client = &http.Client{Transport: counter}

	f.Fuzz(func(t *testing.T, payload []byte, kind uint8, guildID, channelID, userID, msgID string, bot bool, typ uint8, text string) {
		event := gatewayEvents[int(kind)%len(gatewayEvents)]
		check(t, a, s, counter, box, event, payload, false)
		made := madeEvent(event, guildID, channelID, userID, msgID, bot, typ, text)
		check(t, a, s, counter, box, event, made, true)
	})
}

// madeEvent is a payload of event made of the arguments.
func madeEvent(event, guildID, channelID, userID, msgID string, bot bool, typ uint8, text string) []byte {
	var v map[string]any
	switch event {
	case "INTERACTION_CREATE":
		v = map[string]any{"id": "500000000000000001", "application_id": "9", "type": typ, "token": "tok", "guild_id": guildID,
			"channel_id": channelID, "user": map[string]any{"id": userID, "bot": bot},
			"message": map[string]any{"id": msgID, "channel_id": channelID}, "data": map[string]any{"custom_id": text, "component_type": 2}}
	case "MESSAGE_UPDATE":
		v = map[string]any{"id": msgID, "channel_id": channelID, "guild_id": guildID, "author": map[string]any{"id": userID, "bot": bot},
			"content": text}
	case "MESSAGE_DELETE":
		v = map[string]any{"id": msgID, "channel_id": channelID, "guild_id": guildID}
	default:
		v = map[string]any{"user_id": userID, "channel_id": channelID, "guild_id": guildID, "message_id": msgID,
			"emoji": map[string]any{"name": text}}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and booleans always encode
	}
	return raw
}

// check hands payload to the adapter as event and checks what reached
// the core; exact says the payload is well formed, so what it asks for
// must be taken.
func check(t *testing.T, a *Adapter, s *discordgo.Session, counter *ackCounter, box *adaptertest.Recorder, event string, payload []byte, exact bool) {
	t.Helper()
	taps, changes, reactions, acks := len(box.Taps()), len(box.Changes()), len(box.Reactions()), counter.acks.Load()
	if !dispatch(a, s, event, payload) {
		if exact {
			t.Fatalf("%s %s does not decode", event, payload)
		}
		return
	}
	gotTaps, gotChanges, gotReactions := box.Taps()[taps:], box.Changes()[changes:], box.Reactions()[reactions:]
	gotAcks := counter.acks.Load() - acks
	var w wireChange
	if json.Unmarshal(payload, &w) != nil {
		w = wireChange{} // a shape discordgo reads and the oracle does not: only bounds are checked
		if len(gotTaps)+len(gotChanges)+len(gotReactions) > 0 {
			t.Fatalf("%s %q: the core got taps %+v, changes %+v, reactions %+v", event, payload, gotTaps, gotChanges, gotReactions)
		}
		return
	}
	var want bool
	switch event {
	case "INTERACTION_CREATE":
		component := w.Type == int(discordgo.InteractionMessageComponent) && w.Data != nil && isSnowflake(w.ID) && w.Token != ""
		want = component && w.GuildID == "" && w.User != nil && isSnowflake(w.User.ID) && isSnowflake(w.ChannelID) &&
			w.Message != nil && isSnowflake(w.Message.ID) && w.Data.CustomID != ""
		if component != (gotAcks == 1) || gotAcks > 1 {
			t.Fatalf("%s %q: %d acknowledgements", event, payload, gotAcks)
		}
		if len(gotTaps) == 1 {
			m := gotTaps[0]
			if !want || m.Tap == nil || m.Tap.Data != w.Data.CustomID || m.Tap.ID != w.ID || m.Tap.MessageID != w.Message.ID ||
				m.ChannelThreadID != w.ChannelID || m.ChannelUserID != w.User.ID || !m.Direct || m.Platform != Platform {
				t.Fatalf("%s %q became tap %+v (%+v)", event, payload, m, m.Tap)
			}
		}
		checkCount(t, event, payload, len(gotTaps), want, exact)
	case "MESSAGE_UPDATE":
		want = w.GuildID == "" && w.Author != nil && !w.Author.Bot && w.Content != "" && isSnowflake(w.ID) && isSnowflake(w.ChannelID)
		if len(gotChanges) == 1 {
			c := gotChanges[0]
			if !want || c.Deleted || c.Text != w.Content || c.PlatformMessageID != w.ID || c.ChannelThreadID != w.ChannelID ||
				c.ChannelUserID != w.Author.ID || c.At.IsZero() {
				t.Fatalf("%s %q became change %+v", event, payload, c)
			}
		}
		checkCount(t, event, payload, len(gotChanges), want, exact)
	case "MESSAGE_DELETE":
		want = w.GuildID == "" && isSnowflake(w.ID) && isSnowflake(w.ChannelID)
		if len(gotChanges) == 1 {
			c := gotChanges[0]
			if !want || !c.Deleted || c.PlatformMessageID != w.ID || c.ChannelThreadID != w.ChannelID {
				t.Fatalf("%s %q became change %+v", event, payload, c)
			}
		}
		checkCount(t, event, payload, len(gotChanges), want, exact)
	default:
		want = w.GuildID == "" && isSnowflake(w.MessageID) && isSnowflake(w.ChannelID) && isSnowflake(w.UserID) &&
			w.UserID != fuzzBotID && w.Emoji.Name != ""
		if len(gotReactions) == 1 {
			r := gotReactions[0]
			if !want || r.Emoji != w.Emoji.Name || r.MessageID != w.MessageID || r.ChannelThreadID != w.ChannelID ||
				r.ChannelUserID != w.UserID || r.Removed != (event == "MESSAGE_REACTION_REMOVE") {
				t.Fatalf("%s %q became reaction %+v", event, payload, r)
			}
		}
		checkCount(t, event, payload, len(gotReactions), want, exact)
	}
}

// checkCount requires at most one of what an event makes, and exactly one
// of a made event that asks for it.
func checkCount(t *testing.T, event string, payload []byte, n int, want, exact bool) {
	t.Helper()
	if n > 1 || exact && want != (n == 1) {
		t.Fatalf("%s %s: want taken %t, the core got %d", event, payload, want, n)
	}
}

// dispatch decodes payload as discordgo decodes event and hands it to the
// adapter's handler of it; false when it does not decode.
func dispatch(a *Adapter, s *discordgo.Session, event string, payload []byte) bool {
	switch event {
	case "INTERACTION_CREATE":
		var ev discordgo.InteractionCreate
		if json.Unmarshal(payload, &ev) != nil {
			return false
		}
		a.gateway.onInteractionCreate(s, &ev)
	case "MESSAGE_UPDATE":
		var ev discordgo.MessageUpdate
		if json.Unmarshal(payload, &ev) != nil {
			return false
		}
		a.gateway.onMessageUpdate(s, &ev)
	case "MESSAGE_DELETE":
		var ev discordgo.MessageDelete
		if json.Unmarshal(payload, &ev) != nil {
			return false
		}
		a.gateway.onMessageDelete(s, &ev)
	case "MESSAGE_REACTION_ADD":
		var ev discordgo.MessageReactionAdd
		if json.Unmarshal(payload, &ev) != nil {
			return false
		}
		a.gateway.onReactionAdd(s, &ev)
	default:
		var ev discordgo.MessageReactionRemove
		if json.Unmarshal(payload, &ev) != nil {
			return false
		}
		a.gateway.onReactionRemove(s, &ev)
	}
	return true
}
