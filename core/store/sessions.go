package store

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
)

// CreateSessionRecord inserts r and sets its ID (and CreatedAt/UpdatedAt
// from the store's clock when zero).
func (s *Store) CreateSessionRecord(ctx context.Context, r *core.SessionRecord) error {
	rec := *r
	if rec.CreatedAt.IsZero() {
		rec.CreatedAt = s.now()
	}
	if rec.UpdatedAt.IsZero() {
		rec.UpdatedAt = rec.CreatedAt
	}
	rec.StartedAt, rec.CreatedAt, rec.UpdatedAt = utc(rec.StartedAt), utc(rec.CreatedAt), utc(rec.UpdatedAt)
	rec.EndedAt = utcPtr(rec.EndedAt)
	err := s.w.WithContext(ctx).Raw(`INSERT INTO session_records
			(conversation_id, started_at, ended_at, summary, final_mood, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		rec.ConversationID, s.q.t(rec.StartedAt), s.q.nt(rec.EndedAt), rec.Summary, rec.FinalMood,
		s.q.t(rec.CreatedAt), s.q.t(rec.UpdatedAt)).Row().Scan(&rec.ID)
	if err != nil {
		return fmt.Errorf("creating session record: %w", err)
	}
	*r = rec
	return nil
}

// SessionRecords returns a conversation's session records by start time
// (session_records_conversation).
func (s *Store) SessionRecords(ctx context.Context, conversationID int64) ([]core.SessionRecord, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+sessionRecordCols+` FROM session_records
		WHERE conversation_id = ? ORDER BY started_at, id`, []any{conversationID}, sessionRecordDest)
	if err != nil {
		return nil, fmt.Errorf("reading session records of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// utcPtr is utc for a nullable time.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}
