package slack

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
)

// React adds the bot's reaction emoji to message messageID of the DM
// channelThreadID (core.Reactor) with reactions.add, retried as a send is
// (a 429 waits its Retry-After). emoji is a Unicode emoji of the adapter's
// table (emoji.go) or a Slack name ("thumbsup", ":thumbsup:"); another
// emoji, or a name Slack does not know, is a *core.PermanentError naming
// it. A reaction the bot has already made is not an error.
func (s *sender) React(ctx context.Context, channelThreadID, messageID, emoji string) error {
	err := s.reaction(ctx, "reacting on slack with "+emoji, channelThreadID, messageID, emoji, func(ctx context.Context, api *slack.Client, name string, item slack.ItemRef) error {
		return api.AddReactionContext(ctx, name, item)
	})
	if errorCode(err) == "already_reacted" {
		return nil
	}
	return err
}

// Unreact takes back the bot's reaction emoji from message messageID
// (core.Unreactor) with reactions.remove, retried as React is. One that is
// not there (no_reaction), or on a message gone, is not an error.
func (s *sender) Unreact(ctx context.Context, channelThreadID, messageID, emoji string) error {
	err := s.reaction(ctx, "taking back the slack reaction "+emoji, channelThreadID, messageID, emoji, func(ctx context.Context, api *slack.Client, name string, item slack.ItemRef) error {
		return api.RemoveReactionContext(ctx, name, item)
	})
	if code := errorCode(err); code == "no_reaction" || code == "message_not_found" {
		return nil
	}
	return err
}

// reaction makes one reactions.add or reactions.remove call (do, what it
// is doing) of emoji on message messageID, unpaced (reactions are not
// posts, and Slack limits them apart) but retried as a post is.
func (s *sender) reaction(ctx context.Context, what, channelThreadID, messageID, emoji string,
	do func(context.Context, *slack.Client, string, slack.ItemRef) error) error {
	api, err := s.live()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	name, ok := wire.ReactionName(emoji)
	if !ok {
		return &core.PermanentError{Reason: fmt.Sprintf("slack has no reaction for %q: use a common emoji or a slack emoji name", emoji)}
	}
	if wire.ParseTS(messageID, time.Time{}).IsZero() {
		return &core.PermanentError{Reason: fmt.Sprintf("%q is not a slack message ts", messageID)}
	}
	ctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
	defer cancel()
	channel, err := s.channelOf(ctx, core.OutboundMessage{ChannelThreadID: channelThreadID})
	if err != nil {
		return err
	}
	err = s.call(ctx, what, channel, false, func(ctx context.Context) error {
		return do(ctx, api, name, slack.NewRefToMessage(channel, messageID))
	})
	switch errorCode(err) {
	case "invalid_name":
		return &core.PermanentError{Reason: fmt.Sprintf("slack has no emoji named %q (for %q)", name, emoji), Err: err}
	case "too_many_reactions", "too_many_emoji":
		return &core.PermanentError{Reason: "the message has as many reactions as slack allows", Err: err}
	}
	return err
}
