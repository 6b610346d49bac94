package slacktest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// eventFeed makes events happen in the workspace (messages, edits) and
// reports how they were delivered and acked.
type eventFeed struct {
	*state
	*delivery
}

// channel_type values of message events.
const (
	channelIM      = "im"
	channelChannel = "channel"
	channelMPIM    = "mpim"
)

// maxAutoRetries is how many times Slack retries one event on its own.
const maxAutoRetries = 3

// event is one event_callback and its delivery state.
type event struct {
	id          string
	body        []byte // the event_callback JSON
	deliveries  int    // envelopes or POSTs sent, retries included
	acked       bool
	retries     int       // highest retry number used so far
	autoRetries int       // retries the fake made on its own
	cur         *envelope // Socket Mode: the latest delivery
	// kind is the Socket Mode envelope type: "" for events_api, or
	// slash_commands, whose body is the command itself.
	kind string
	// response is the app's answer to a slash command.
	response *SlashResponse
	// tap is the app's ack of a tap (kind interactive).
	tap *TapAck
}

// callbackWire is the outer event_callback.
type callbackWire struct {
	Token              string              `json:"token"`
	TeamID             string              `json:"team_id"`
	APIAppID           string              `json:"api_app_id"`
	Event              json.RawMessage     `json:"event"`
	Type               string              `json:"type"`
	EventID            string              `json:"event_id"`
	EventTime          int64               `json:"event_time"`
	Authorizations     []authorizationWire `json:"authorizations"`
	IsExtSharedChannel bool                `json:"is_ext_shared_channel"`
	EventContext       string              `json:"event_context"`
}

type authorizationWire struct {
	EnterpriseID        *string `json:"enterprise_id"`
	TeamID              string  `json:"team_id"`
	UserID              string  `json:"user_id"`
	IsBot               bool    `json:"is_bot"`
	IsEnterpriseInstall bool    `json:"is_enterprise_install"`
}

// SendEvent sends any inner event (a JSON object with a "type"), wrapped
// in an event_callback like every other event, and returns its event_id.
// It panics if inner is not valid JSON.
func (s *eventFeed) SendEvent(inner json.RawMessage) (eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emitLocked(inner)
}

// userMessageLocked emits a user's new message. Callers hold s.mu.
func (s *eventFeed) userMessageLocked(chID, chType string, from User, text string) string {
	s.addUserLocked(from)
	if _, ok := s.channels[chID]; !ok {
		s.channels[chID] = chType
	}
	ts := s.nextTSLocked()
	s.inbound[chID+"/"+ts] = text
	s.emitLocked(mustJSON(map[string]any{
		"client_msg_id": newUUID(),
		"type":          "message",
		"text":          text,
		"user":          from.ID,
		"ts":            ts,
		"team":          teamID,
		"channel":       chID,
		"event_ts":      ts,
		"channel_type":  chType,
	}))
	return ts
}

// SendDM sends a direct message from a user to the bot (channel_type
// "im"), opening the DM first if needed, and returns the DM channel id and
// the message ts. text goes out as given: write it as Slack would, with
// &amp; &lt; &gt; escaped and <@U…> mentions.
func (s *eventFeed) SendDM(from User, text string) (channelID, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(from)
	channelID, _ = s.dmLocked(from.ID)
	return channelID, s.userMessageLocked(channelID, channelIM, from, text)
}

// SendChannel sends a user's message in a public channel ("C…", channel_type
// "channel"); the bot can post there afterwards.
func (s *eventFeed) SendChannel(channelID string, from User, text string) (ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userMessageLocked(channelID, channelChannel, from, text)
}

// SendGroupDM sends a user's message in a group DM ("G…", channel_type
// "mpim"); the bot can post there afterwards.
func (s *eventFeed) SendGroupDM(channelID string, from User, text string) (ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userMessageLocked(channelID, channelMPIM, from, text)
}

// SendOwn sends a message event as if the bot had posted text itself
// (user BotUserID, bot_id BotID, app_id AppID). The channel_type is that
// of channelID if the fake knows it, else "im".
func (s *eventFeed) SendOwn(channelID, text string) (ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts = s.nextTSLocked()
	m := s.botMessageLocked(channelID, text, ts, "")
	m["channel"], m["event_ts"], m["channel_type"] = channelID, ts, s.channelTypeLocked(channelID)
	s.emitLocked(mustJSON(m))
	return ts
}

// SendBotMessage sends a message of another bot (subtype "bot_message",
// bot_id botID, no user). The channel_type is that of channelID if the
// fake knows it, else "im".
func (s *eventFeed) SendBotMessage(channelID, botID, text string) (ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts = s.nextTSLocked()
	s.emitLocked(mustJSON(map[string]any{
		"type":         "message",
		"subtype":      "bot_message",
		"text":         text,
		"ts":           ts,
		"bot_id":       botID,
		"username":     "bot " + botID,
		"channel":      channelID,
		"event_ts":     ts,
		"channel_type": s.channelTypeLocked(channelID),
	}))
	return ts
}

// EditDM sends a message_changed event: from edited their DM message ts
// to read text. previous_message carries the earlier text if the fake
// sent that message. It returns the event_id.
func (s *eventFeed) EditDM(from User, ts, text string) (eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(from)
	chID, _ := s.dmLocked(from.ID)
	key := chID + "/" + ts
	prev := s.inbound[key]
	s.inbound[key] = text
	now := s.nextTSLocked()
	return s.emitLocked(mustJSON(map[string]any{
		"type":    "message",
		"subtype": "message_changed",
		"hidden":  true,
		"message": map[string]any{
			"type":   "message",
			"text":   text,
			"user":   from.ID,
			"team":   teamID,
			"ts":     ts,
			"edited": map[string]any{"user": from.ID, "ts": now},
		},
		"previous_message": map[string]any{
			"type": "message",
			"text": prev,
			"user": from.ID,
			"team": teamID,
			"ts":   ts,
		},
		"channel":      chID,
		"ts":           now,
		"event_ts":     now,
		"channel_type": channelIM,
	}))
}

// botMessageLocked is the bot's message object. Callers hold s.mu.
func (s *state) botMessageLocked(chID, text, ts, threadTS string) map[string]any {
	m := map[string]any{
		"type":    "message",
		"user":    botUserID,
		"bot_id":  botID,
		"app_id":  appID,
		"text":    text,
		"ts":      ts,
		"team":    teamID,
		"channel": chID,
	}
	if threadTS != "" {
		m["thread_ts"] = threadTS
	}
	return m
}

// channelTypeLocked is the channel_type of a known channel, "im" for an
// unknown one. Callers hold s.mu.
func (s *state) channelTypeLocked(chID string) string {
	if t, ok := s.channels[chID]; ok {
		return t
	}
	return channelIM
}

// LastEventID returns the event_id of the newest event, "" if none. The
// echo of a chat.postMessage into a DM is an event too.
func (s *eventFeed) LastEventID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastEventID
}

// Acked reports whether eventID was acknowledged: in Socket Mode an ack
// arrived for one of its envelopes; with the Events API a delivery got a
// 2xx answer.
func (s *eventFeed) Acked(eventID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.events[eventID]
	return ev != nil && ev.acked
}

// WaitAcked waits until eventID is acknowledged (see Acked); after timeout
// it fails the test. Call it from the test goroutine.
func (s *eventFeed) WaitAcked(t testing.TB, eventID string, timeout time.Duration) {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool {
			ev := s.events[eventID]
			return ev != nil && ev.acked
		},
		func() string {
			return fmt.Sprintf("an ack of %s (%d deliveries)", eventID, s.Deliveries(eventID))
		})
}

// Deliveries returns how many times eventID was sent (Socket Mode
// envelopes or Events API POSTs), retries included.
func (s *eventFeed) Deliveries(eventID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev := s.events[eventID]; ev != nil {
		return ev.deliveries
	}
	return 0
}

// Redeliver sends eventID again now, as a retry (retry_attempt or
// X-Slack-Retry-Num one higher than before), acknowledged or not: for
// testing that the bot handles an event once. It panics on an unknown id.
func (s *eventFeed) Redeliver(eventID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.events[eventID]
	if ev == nil {
		panic("slacktest: Redeliver of unknown event " + eventID)
	}
	s.deliverLocked(ev, ev.retries+1, false)
	s.notify()
}

// BadAcks returns how many Socket Mode frames acknowledged no envelope the
// fake had sent (unknown or missing envelope_id, or not JSON).
func (s *eventFeed) BadAcks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.badAcks
}

// mustJSON marshals a value built by the fake itself.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("slacktest: marshalling: %v", err))
	}
	return b
}
