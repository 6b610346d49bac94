package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// SettleDelivery records where a stored outbound message now stands: its
// delivery state, first platform id and metadata.
func (s *MessageLog) SettleDelivery(ctx context.Context, m core.Message) error {
	meta, err := encodeMetadata(m.Metadata)
	if err != nil {
		return fmt.Errorf("settling message %d: %w", m.ID, err)
	}
	err = s.write(ctx, func(tx *gorm.DB) error { return settleDelivery(tx, &m, meta) })
	if err != nil {
		return fmt.Errorf("settling message %d: %w", m.ID, err)
	}
	return nil
}

// settleDelivery writes m's delivery, platform id and metadata (meta, m's
// encoded) in tx.
func settleDelivery(tx *gorm.DB, m *core.Message, meta string) error {
	// No row (deleted meanwhile by /forget or the API) is nothing to keep.
	err := exec(tx, `UPDATE messages SET delivery = ?, platform_message_id = ?, metadata = ? WHERE id = ?`,
		string(m.Delivery), m.PlatformMessageID, meta, m.ID)
	if err != nil {
		return fmt.Errorf("recording the delivery of message %d: %w", m.ID, err)
	}
	return dropFiles(tx, m)
}

// PendingDeliveries returns the conversation's messages left sending by
// runs other than exceptRun, oldest first (messages_sending).
func (s *MessageLog) PendingDeliveries(ctx context.Context, conversationID, exceptRun int64) ([]core.Message, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? AND delivery = 'sending' AND (run_id IS NULL OR run_id <> ?) ORDER BY seq`,
		[]any{conversationID, exceptRun}, messageDest)
	if err != nil {
		return nil, fmt.Errorf("reading the unsent replies of conversation %d: %w", conversationID, err)
	}
	if err := s.withFiles(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}
