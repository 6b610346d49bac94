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
