package slacktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"
)

// taps plays users tapping the bot's buttons (block_actions interaction
// payloads, over Socket Mode or POSTed to the interactivity URL) and
// answers chat.postEphemeral.
type taps struct {
	*state
	*delivery
}

// envelopeInteractive is the Socket Mode envelope type of an interaction.
const envelopeInteractive = "interactive"

// tapAckDeadline is how long Slack waits for an interaction's ack before
// it shows the user a warning that the app did not respond.
const tapAckDeadline = 3 * time.Second

// TapAck is how the app acknowledged a tap: the ack of its envelope in
// Socket Mode, the answer to its POST with an interactivity URL.
type TapAck struct {
	// Status is the HTTP answer's status; 0 in Socket Mode.
	Status int
	// After is how long the app took to acknowledge it.
	After time.Duration
	// Late is true when that was after Slack's 3 s: the user saw the tap
	// fail (Slack's warning icon), whatever the app did next.
	Late bool
}

// Ephemeral is a message the bot showed one user with chat.postEphemeral.
type Ephemeral struct {
	Channel string
	User    string
	// Text is as posted (still escaped).
	Text string
	At   time.Time // by the server's clock (WithNow)
}

// blockActionsWire is a block_actions interaction payload, as Slack sends
// it for a tap on a button of a message.
type blockActionsWire struct {
	Type                string            `json:"type"`
	User                tapUserWire       `json:"user"`
	APIAppID            string            `json:"api_app_id"`
	Token               string            `json:"token"`
	Container           tapContainerWire  `json:"container"`
	TriggerID           string            `json:"trigger_id"`
	Team                map[string]string `json:"team"`
	IsEnterpriseInstall bool              `json:"is_enterprise_install"`
	Channel             map[string]string `json:"channel"`
	Message             map[string]any    `json:"message"`
	State               map[string]any    `json:"state"`
	ResponseURL         string            `json:"response_url"`
	Actions             []tapActionWire   `json:"actions"`
}

type tapUserWire struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Name     string `json:"name"`
	TeamID   string `json:"team_id"`
}

type tapContainerWire struct {
	Type        string `json:"type"`
	MessageTS   string `json:"message_ts"`
	ChannelID   string `json:"channel_id"`
	IsEphemeral bool   `json:"is_ephemeral"`
}

type tapActionWire struct {
	ActionID string            `json:"action_id"`
	BlockID  string            `json:"block_id"`
	Text     map[string]string `json:"text"`
	Value    string            `json:"value"`
	Type     string            `json:"type"`
	ActionTS string            `json:"action_ts"`
}

// UseInteractivityURL makes taps go as signed, form-encoded HTTP POSTs
// (field payload) to url, as Slack does for an app not in Socket Mode
// (Interactivity's Request URL). Until it is called they go over Socket
// Mode.
func (s *taps) UseInteractivityURL(url string) {
	if url == "" {
		panic("slacktest: UseInteractivityURL needs a URL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interactivityURL = url
}

// Tap has from tap the button with value on the bot's message ts in
// channelID, and returns the tap's trigger_id, the key of its TapAck.
// The app gets a block_actions payload as Slack sends one: an interactive
// envelope over Socket Mode (redelivered like events while not acked), or
// one signed POST to the interactivity URL. It fails when the message
// shows no such button: Slack has nothing to tap then.
func (s *taps) Tap(from User, channelID, ts, value string) (triggerID string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tapLocked(from, channelID, ts, value, true)
}

// tapLocked is Tap; shown requires a button with value on the message.
// Callers hold s.mu.
func (s *taps) tapLocked(from User, channelID, ts, value string, shown bool) (triggerID string, err error) {
	m, ok := s.botMsgs[channelID+"/"+ts]
	if !ok || m.Deleted {
		return "", fmt.Errorf("slacktest: no bot message %s in %s to tap", ts, channelID)
	}
	var action *tapActionWire
	var raw []json.RawMessage
	for _, b := range m.Blocks {
		raw = append(raw, b.Raw)
		for _, bt := range b.Buttons {
			if bt.Value == value && action == nil {
				action = &tapActionWire{ActionID: bt.ActionID, BlockID: b.BlockID, Value: bt.Value, Type: "button",
					Text: map[string]string{"type": "plain_text", "text": bt.Label}}
			}
		}
	}
	if action == nil && shown {
		return "", errors.New("slacktest: the message shows no button with value " + value)
	}
	if action == nil {
		action = &tapActionWire{ActionID: "forged", BlockID: "forged", Value: value, Type: "button",
			Text: map[string]string{"type": "plain_text", "text": value}}
	}
	s.addUserLocked(from)
	s.nextTrigger++
	triggerID = fmt.Sprintf("%d.%d.%s", 1000000000+s.nextTrigger, 4242, randomHex(16))
	action.ActionTS = s.nextTSLocked()
	name := s.users[from.ID].Name
	chName := "directmessage"
	if s.channels[channelID] != channelIM {
		chName = "channel"
	}
	msg := s.botMessageLocked(channelID, m.Text, m.TS, "")
	delete(msg, "channel") // a message in a payload does not name its channel
	if len(raw) > 0 {
		msg["blocks"] = raw
	}
	w := blockActionsWire{
		Type: "block_actions", User: tapUserWire{ID: from.ID, Username: name, Name: name, TeamID: teamID},
		APIAppID: appID, Token: verificationToken,
		Container: tapContainerWire{Type: "message", MessageTS: ts, ChannelID: channelID},
		TriggerID: triggerID, Team: map[string]string{"id": teamID, "domain": teamName},
		Channel: map[string]string{"id": channelID, "name": chName}, Message: msg,
		State: map[string]any{"values": map[string]any{}}, ResponseURL: s.srv.URL + "/actions/" + url.PathEscape(triggerID),
		Actions: []tapActionWire{*action},
	}
	ev := &event{id: triggerID, body: mustJSON(w), kind: envelopeInteractive}
	s.events[triggerID] = ev
	if s.interactivityURL != "" {
		s.wg.Add(1)
		go s.postTap(s.interactivityURL, ev)
	} else {
		s.deliverLocked(ev, 0, true)
	}
	s.notify()
	return triggerID, nil
}

// postTap POSTs a tap to target once (Slack does not retry interactions)
// and records the answer.
func (s *taps) postTap(target string, ev *event) {
	defer s.wg.Done()
	start := time.Now()
	sc := &slashCommands{s.state, s.delivery}
	status, _ := sc.postForm(target, []byte(url.Values{"payload": {string(ev.body)}}.Encode()))
	after := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	ev.deliveries++
	ev.acked = status >= 200 && status <= 299
	ev.tap = &TapAck{Status: status, After: after, Late: after > tapAckDeadline}
	s.notify()
}

// ackTapLocked records the socket ack of a tap's envelope env. Callers
// hold s.mu.
func ackTapLocked(env *envelope) {
	if env.ev.kind != envelopeInteractive || env.ev.tap != nil {
		return
	}
	after := time.Since(env.sentAt)
	env.ev.tap = &TapAck{After: after, Late: after > tapAckDeadline}
}

// WaitTapAck waits until the app acknowledged the tap triggerID (acked
// its envelope, or answered its POST) and returns how; after timeout it
// fails the test. Call it from the test goroutine.
func (s *taps) WaitTapAck(t testing.TB, triggerID string, timeout time.Duration) TapAck {
	t.Helper()
	var out TapAck
	s.waitFor(t, timeout,
		func() bool {
			ev := s.events[triggerID]
			if ev == nil || ev.tap == nil {
				return false
			}
			out = *ev.tap
			return true
		},
		func() string { return fmt.Sprintf("an ack of tap %s", triggerID) })
	return out
}

// chatPostEphemeral shows text to one user in a channel, as Slack does: a
// user who is not in the channel (in a DM: not its user) is
// user_not_in_channel.
func (s *taps) chatPostEphemeral(p params) (result, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, user := p["channel"], p["user"]
	if _, ok := s.channels[ch]; !ok {
		return nil, "channel_not_found"
	}
	if _, ok := s.users[user]; !ok && user != botUserID {
		return nil, "user_not_found"
	}
	if dmUser, ok := s.dmUser[ch]; ok && dmUser != user {
		return nil, "user_not_in_channel"
	}
	if p["text"] == "" && !nonEmptyJSONList(p["blocks"]) {
		return nil, "no_text"
	}
	if _, code := readBlocks(p["blocks"]); code != "" {
		return nil, code
	}
	ts := s.nextTSLocked()
	s.ephemerals = append(s.ephemerals, Ephemeral{Channel: ch, User: user, Text: p["text"], At: s.now()})
	s.notify()
	return result{"message_ts": ts}, ""
}

// Ephemerals returns the messages the bot showed single users in
// channelID with chat.postEphemeral, in order.
func (s *taps) Ephemerals(channelID string) []Ephemeral {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ephemeralsLocked(channelID)
}

func (s *taps) ephemeralsLocked(channelID string) []Ephemeral {
	var out []Ephemeral
	for _, e := range s.ephemerals {
		if e.Channel == channelID {
			out = append(out, e)
		}
	}
	return out
}

// WaitEphemerals waits until the bot showed at least n ephemeral
// messages in channelID and returns them all; after timeout it fails the
// test. Call it from the test goroutine.
func (s *taps) WaitEphemerals(t testing.TB, channelID string, n int, timeout time.Duration) []Ephemeral {
	t.Helper()
	s.waitFor(t, timeout, func() bool { return len(s.ephemeralsLocked(channelID)) >= n },
		func() string {
			return fmt.Sprintf("%d ephemeral message(s) in %s, got %+v", n, channelID, s.Ephemerals(channelID))
		})
	return s.Ephemerals(channelID)
}
