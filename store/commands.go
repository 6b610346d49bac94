package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// What the chat commands (commands) need beyond the other queries.

// EndSessionRecord ends the conversation's current session record at at
// and leaves the conversation without one, so that its next message
// starts a new record: a fresh window for the model (/new). The ended
// record is summarised like any other (ClaimEndedRecords takes it). It
// returns the id of the record it ended, nil when the conversation had
// none; core.ErrNotFound for an unknown conversation.
func (s *Store) EndSessionRecord(ctx context.Context, conversationID int64, at time.Time) (*int64, error) {
	var ended *int64
	t := s.q.t(at)
	err := s.write(ctx, func(tx *gorm.DB) error {
		ended = nil
		// The update reads the current record and, on PostgreSQL, locks the
		// row until commit, so no message joins the record meanwhile.
		var cur sql.NullInt64
		err := row(tx, `UPDATE conversations SET updated_at = ? WHERE id = ? RETURNING current_record_id`, t, conversationID).
			Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("conversation %d: %w", conversationID, core.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if !cur.Valid {
			return nil
		}
		if err := tx.Exec(`UPDATE session_records SET ended_at = ?, updated_at = ? WHERE id = ? AND ended_at IS NULL`,
			t, t, cur.Int64).Error; err != nil {
			return err
		}
		if err := tx.Exec(`UPDATE conversations SET current_record_id = NULL WHERE id = ?`, conversationID).Error; err != nil {
			return err
		}
		id := cur.Int64
		ended = &id
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ending the session record of conversation %d: %w", conversationID, err)
	}
	return ended, nil
}
