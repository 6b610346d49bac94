package intake

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
)

// HandleChange applies a user's edit or deletion of a message they sent
// (core.ChangeHandler): the stored text follows, and the history cache
// with it, so a turn not started yet reads the new text; a deleted
// message keeps its row for the record, its text gone and out of every
// prompt. A change to a message the bot does not know is ignored.
func (e *Engine) HandleChange(ctx context.Context, c core.MessageChange) error {
	log := e.log.With("platform", c.Platform, "thread", c.ChannelThreadID)
	if c.Platform == "" || c.ChannelThreadID == "" || c.PlatformMessageID == "" {
		return nil
	}
	conv, err := e.cfg.Store.ConversationByThread(ctx, c.Platform, c.ChannelThreadID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finding the conversation of an edited message: %w", err)
	}
	m, err := e.cfg.Store.MessageByPlatformID(ctx, conv.ID, c.PlatformMessageID, core.RoleUser)
	if errors.Is(err, core.ErrNotFound) {
		log.Debug("an edit of a message the bot does not know", "platform_message_id", c.PlatformMessageID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("finding an edited message: %w", err)
	}
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	at := c.At
	if at.IsZero() {
		at = e.cfg.Clock.Now()
	}
	if c.Deleted {
		m.Content, m.Metadata[core.DeletedKey] = "", true
	} else {
		text, _ := storable(core.InboundMessage{Text: c.Text})
		if text == m.Content {
			return nil // an embed resolved, a pin: not the text
		}
		m.Content = text
	}
	m.Metadata[core.EditedAtKey] = at.UTC().Format(time.RFC3339)
	if err := e.cfg.Store.SetMessageText(ctx, m); err != nil {
		return fmt.Errorf("storing an edited message: %w", err)
	}
	e.cfg.Outbox.Replaced(conv.ID, m)
	log.Debug("a user's message changed", "message", m.ID, "deleted", c.Deleted)
	return nil
}
