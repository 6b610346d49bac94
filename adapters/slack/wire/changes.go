package wire

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/parleybot/parley/adapters/slack/mrkdwn"
	"github.com/parleybot/parley/core"
)

// Subtypes of the message events that change a message already sent.
const (
	SubtypeChanged = "message_changed"
	SubtypeDeleted = "message_deleted"
)

// changedMsg is a message as message_changed and message_deleted carry it
// (event.message, event.previous_message).
type changedMsg struct {
	Type    string `json:"type"`
	SubType string `json:"subtype"`
	User    string `json:"user"`
	BotID   string `json:"bot_id"`
	Text    string `json:"text"`
	TS      string `json:"ts"`
	Edited  *struct {
		TS string `json:"ts"`
	} `json:"edited"`
}

// changeEvent is the part of a message_changed or message_deleted event
// the adapter reads.
type changeEvent struct {
	Type        string      `json:"type"`
	SubType     string      `json:"subtype"`
	Channel     string      `json:"channel"`
	ChannelType string      `json:"channel_type"`
	TS          string      `json:"ts"`
	DeletedTS   string      `json:"deleted_ts"`
	Message     *changedMsg `json:"message"`
	Previous    *changedMsg `json:"previous_message"`
}

// Change reads a message_changed or message_deleted event as the
// core's MessageChange on platform p, or says why it is none of the core's business
// (why != ""): outside a DM, of the bot's own messages or another bot's,
// or an edit that left the text as it was (Slack edits a message itself
// to add a link's unfurl, with the same text). botUser is the bot's user
// id; now stands in for a time the event does not carry.
func Change(raw []byte, p core.Platform, botUser string, now time.Time) (c core.MessageChange, why string) {
	var ev changeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return c, "not a change event: " + err.Error()
	}
	c = core.MessageChange{Platform: p, ChannelThreadID: ev.Channel, At: ParseTS(ev.TS, now)}
	var m *changedMsg
	switch ev.SubType {
	case SubtypeChanged:
		m = ev.Message
		if m == nil {
			return c, "an edit without its message"
		}
		c.PlatformMessageID, c.Text = m.TS, mrkdwn.ToText(m.Text)
		if m.Edited != nil {
			c.At = ParseTS(m.Edited.TS, c.At)
		}
		if ev.Previous != nil && ev.Previous.Text == m.Text {
			return c, "the text is unchanged (an unfurl)"
		}
		if m.SubType != "" && m.SubType != "file_share" {
			return c, "an edit of a " + m.SubType
		}
	case SubtypeDeleted:
		// Slack may leave previous_message out; the core ignores a
		// deletion of a message that is not a user's it knows.
		m = ev.Previous
		c.PlatformMessageID, c.Deleted = ev.DeletedTS, true
	default:
		return c, "subtype " + ev.SubType
	}
	if m != nil {
		c.ChannelUserID = m.User
	}
	switch {
	case ev.ChannelType != "im":
		return c, "not a direct message"
	case ev.Channel == "" || c.PlatformMessageID == "":
		return c, "no channel or message"
	case m != nil && (m.BotID != "" || (m.User != "" && m.User == botUser)):
		return c, "a bot's message"
	case !c.Deleted && m.User == "":
		return c, "an edit without its author"
	}
	return c, ""
}

// reactionEvent is the part of a reaction_added or reaction_removed event
// the adapter reads.
type reactionEvent struct {
	Type     string `json:"type"`
	User     string `json:"user"`
	Reaction string `json:"reaction"`
	ItemUser string `json:"item_user"`
	Item     struct {
		Type    string `json:"type"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
	} `json:"item"`
	EventTS string `json:"event_ts"`
}

// Reaction reads a reaction_added or reaction_removed event as the
// core's Reaction on platform p, or says why it is none of the core's business: on a
// file or outside a DM (a reaction event has no channel_type: a DM's id
// starts with D, as taps are told apart), or the bot's own. In a DM the
// only other member is its user. Whether the message is the bot's is the
// core's to say: it keeps reactions on the messages it sent.
func Reaction(raw []byte, p core.Platform, botUser string, now time.Time) (r core.Reaction, why string) {
	var ev reactionEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return r, "not a reaction event: " + err.Error()
	}
	r = core.Reaction{Platform: p, ChannelThreadID: ev.Item.Channel, ChannelUserID: ev.User,
		MessageID: ev.Item.TS, Emoji: EmojiOf(ev.Reaction), Removed: ev.Type == "reaction_removed",
		At: ParseTS(ev.EventTS, now)}
	switch {
	case ev.Type != "reaction_added" && ev.Type != "reaction_removed":
		return r, "type " + ev.Type
	case ev.Item.Type != "message":
		return r, "on a " + ev.Item.Type + ", not a message"
	case !strings.HasPrefix(ev.Item.Channel, "D"):
		return r, "not a direct message"
	case ev.User == "" || ev.Item.TS == "" || r.Emoji == "":
		return r, "no user, message or emoji"
	case ev.User == botUser:
		return r, "the bot's own reaction"
	}
	return r, ""
}
