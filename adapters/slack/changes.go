package slack

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/parleybot/parley/adapters/slack/mrkdwn"
	"github.com/parleybot/parley/core"
)

// Subtypes of the message events that change a message already sent.
const (
	subtypeChanged = "message_changed"
	subtypeDeleted = "message_deleted"
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

// decodeChange reads a message_changed or message_deleted event as the
// core's MessageChange, or says why it is none of the core's business
// (why != ""): outside a DM, of the bot's own messages or another bot's,
// or an edit that left the text as it was (Slack edits a message itself
// to add a link's unfurl, with the same text). botUser is the bot's user
// id; now stands in for a time the event does not carry.
func decodeChange(raw []byte, botUser string, now time.Time) (c core.MessageChange, why string) {
	var ev changeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return c, "not a change event: " + err.Error()
	}
	c = core.MessageChange{Platform: Platform, ChannelThreadID: ev.Channel, At: parseTS(ev.TS, now)}
	var m *changedMsg
	switch ev.SubType {
	case subtypeChanged:
		m = ev.Message
		if m == nil {
			return c, "an edit without its message"
		}
		c.PlatformMessageID, c.Text = m.TS, mrkdwn.ToText(m.Text)
		if m.Edited != nil {
			c.At = parseTS(m.Edited.TS, c.At)
		}
		if ev.Previous != nil && ev.Previous.Text == m.Text {
			return c, "the text is unchanged (an unfurl)"
		}
		if m.SubType != "" && m.SubType != "file_share" {
			return c, "an edit of a " + m.SubType
		}
	case subtypeDeleted:
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

// handleChange hands a user's edit or deletion of a DM to the core (once
// per event id, as a DM is), which makes the stored text follow. It
// reports whether Slack may forget the event, as handleCallback does.
func (in *inbound) handleChange(ctx context.Context, eventID string, raw []byte, retry int) bool {
	botUser, _ := in.ownIDs()
	c, why := decodeChange(raw, botUser, in.clock.Now())
	if why != "" {
		in.log.Debug("ignoring a slack message change", "why", why, "channel", c.ChannelThreadID)
		return true
	}
	key := eventID
	if key == "" {
		key = c.ChannelThreadID + "/" + c.PlatformMessageID + "/" + c.At.Format(time.RFC3339Nano)
	}
	return in.handOver(ctx, key, retry, c.ChannelThreadID, func(ctx context.Context, h core.Host, _ time.Time) error {
		return h.HandleChange(ctx, c)
	})
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

// decodeReaction reads a reaction_added or reaction_removed event as the
// core's Reaction, or says why it is none of the core's business: on a
// file or outside a DM (a reaction event has no channel_type: a DM's id
// starts with D, as taps are told apart), or the bot's own. In a DM the
// only other member is its user. Whether the message is the bot's is the
// core's to say: it keeps reactions on the messages it sent.
func decodeReaction(raw []byte, botUser string, now time.Time) (r core.Reaction, why string) {
	var ev reactionEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return r, "not a reaction event: " + err.Error()
	}
	r = core.Reaction{Platform: Platform, ChannelThreadID: ev.Item.Channel, ChannelUserID: ev.User,
		MessageID: ev.Item.TS, Emoji: emojiOf(ev.Reaction), Removed: ev.Type == "reaction_removed",
		At: parseTS(ev.EventTS, now)}
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

// handleReaction hands a user's reaction in a DM to the core (once per
// event id), which keeps it with the bot's message for the next turn; it
// starts none. It reports whether Slack may forget the event.
func (in *inbound) handleReaction(ctx context.Context, eventID string, raw []byte, retry int) bool {
	botUser, _ := in.ownIDs()
	r, why := decodeReaction(raw, botUser, in.clock.Now())
	if why != "" {
		in.log.Debug("ignoring a slack reaction", "why", why, "channel", r.ChannelThreadID)
		return true
	}
	key := eventID
	if key == "" {
		key = r.ChannelThreadID + "/" + r.MessageID + "/" + r.Emoji + "/" + r.At.Format(time.RFC3339Nano)
	}
	return in.handOver(ctx, key, retry, r.ChannelThreadID, func(ctx context.Context, h core.Host, _ time.Time) error {
		return h.HandleReaction(ctx, r)
	})
}
