package core

import (
	"context"
	"time"
)

// A user's reaction to a bot message (Telegram's message_reaction,
// Discord's reaction add and remove, Slack's reaction_added and _removed)
// is stored with that message and reaches the model in the next turn as
// the emoji with a short quote of the message; by itself it starts no
// turn. A reaction to a message the bot does not know is ignored. Tool
// react {emoji} reacts to the user's latest message (Reactor).

// Reaction is a user's reaction added to, or removed from, a bot message.
type Reaction struct {
	Platform        Platform
	ChannelThreadID string
	ChannelUserID   string
	// MessageID is the platform id of the bot's message reacted to.
	MessageID string
	// Emoji is the reaction: a Unicode emoji, or a custom emoji's name.
	Emoji   string
	Removed bool
	At      time.Time
}

// ReactionHandler takes users' reactions; the Host handed to adapters
// implements it.
type ReactionHandler interface {
	HandleReaction(ctx context.Context, r Reaction) error
}

// ReactionsKey is the Message.Metadata key listing the reactions a bot
// message has from its user, in the order they came.
const ReactionsKey = "reactions"

// MessageReactions are the emoji m has from its user.
func MessageReactions(m Message) []string { return metaStrings(m.Metadata[ReactionsKey]) }

// Reactor is an optional Adapter capability: react to a message of the
// conversation (tool react). An adapter maps emoji to what its platform
// accepts (Telegram allows a fixed set) and returns an error naming the
// emoji it cannot show.
type Reactor interface {
	React(ctx context.Context, channelThreadID, messageID, emoji string) error
}

// Unreactor is an optional Reactor capability: take back a reaction the
// bot made (bot.ack_reaction's, once the reply is out). Taking back one
// that is not there is not an error.
type Unreactor interface {
	Unreact(ctx context.Context, channelThreadID, messageID, emoji string) error
}

// A user may edit or delete a message they sent (Telegram's
// edited_message, Discord's message update and delete, Slack's
// message_changed and message_deleted). The stored text follows: the
// history, the search index and the next prompt read the new text, a
// turn not started yet answers it, and a deleted message leaves the
// window. An edit to a message older than the window changes the record
// only; a change to a message the bot does not know is ignored.

// MessageChange is a user's edit or deletion of a message they sent.
type MessageChange struct {
	Platform        Platform
	ChannelThreadID string
	ChannelUserID   string
	// PlatformMessageID is the changed message's id, as its
	// InboundMessage had it.
	PlatformMessageID string
	// Text is the message's new text; empty when Deleted.
	Text    string
	Deleted bool
	At      time.Time
}

// ChangeHandler takes users' edits and deletions; the Host handed to
// adapters implements it. An adapter whose platform tells it about edits
// hands them over; one whose platform does not has nothing to call.
type ChangeHandler interface {
	HandleChange(ctx context.Context, c MessageChange) error
}

// Metadata keys of a changed message.
const (
	// EditedAtKey holds when a user last edited the message (RFC 3339).
	EditedAtKey = "edited_at"
	// DeletedKey is true on a message its user deleted: kept for the
	// record, out of the history a prompt reads.
	DeletedKey = "deleted"
)

// Deleted reports whether its user deleted m.
func (m Message) Deleted() bool { return m.Metadata[DeletedKey] == true }
