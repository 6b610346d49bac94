package intake

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/parleybot/parley/core"
)

// maxReactions bounds the reactions kept on one message.
const maxReactions = 20

// HandleReaction stores a user's reaction with the bot message it is on
// (core.ReactionHandler), for the next turn to read; it starts no turn. A
// reaction to a message the bot does not know is ignored; one removed is
// taken off the message.
func (e *Engine) HandleReaction(ctx context.Context, r core.Reaction) error {
	if r.Platform == "" || r.ChannelThreadID == "" || r.MessageID == "" || r.Emoji == "" {
		return nil
	}
	if !e.door.known(ctx, r.Platform, r.ChannelUserID) {
		return nil
	}
	conv, err := e.cfg.Store.ConversationByThread(ctx, r.Platform, r.ChannelThreadID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finding the conversation of a reaction: %w", err)
	}
	m, err := e.cfg.Store.MessageByPlatformID(ctx, conv.ID, r.MessageID, core.RoleAssistant)
	if errors.Is(err, core.ErrNotFound) {
		e.log.Debug("a reaction to a message the bot does not know", "platform", r.Platform, "message_id", r.MessageID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("finding the message reacted to: %w", err)
	}
	emoji := core.StorableText(r.Emoji)
	reactions := core.MessageReactions(m)
	i := slices.Index(reactions, emoji)
	switch {
	case r.Removed && i < 0, !r.Removed && i >= 0:
		return nil // nothing changes
	case r.Removed:
		reactions = slices.Delete(slices.Clone(reactions), i, i+1)
	case len(reactions) >= maxReactions:
		return nil
	default:
		reactions = append(slices.Clone(reactions), emoji)
	}
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[core.ReactionsKey] = reactions
	if len(reactions) == 0 {
		delete(m.Metadata, core.ReactionsKey)
	}
	if err := e.cfg.Store.SetMessageText(ctx, m); err != nil {
		return fmt.Errorf("storing a reaction: %w", err)
	}
	e.cfg.Outbox.Replaced(conv.ID, m)
	return nil
}
