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

// Sessions is a conversation's session records: the windows of its
// history that a turn reads, freezes its prompt in and summarises.
type Sessions struct{ *dbs }

// CreateSessionRecord inserts r and sets its ID (and CreatedAt/UpdatedAt
// from the store's clock when zero).
func (s *Sessions) CreateSessionRecord(ctx context.Context, r *core.SessionRecord) error {
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
			(conversation_id, started_at, ended_at, summary, final_mood, prompt, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		rec.ConversationID, s.q.t(rec.StartedAt), s.q.nt(rec.EndedAt), rec.Summary, rec.FinalMood, rec.Prompt,
		s.q.t(rec.CreatedAt), s.q.t(rec.UpdatedAt)).Row().Scan(&rec.ID)
	if err != nil {
		return fmt.Errorf("creating session record: %w", s.classify(err))
	}
	*r = rec
	return nil
}

// SessionRecords returns a conversation's session records by start time
// (session_records_conversation).
func (s *Sessions) SessionRecords(ctx context.Context, conversationID int64) ([]core.SessionRecord, error) {
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

// SessionRecord returns a session record by id.
func (s *Sessions) SessionRecord(ctx context.Context, id int64) (core.SessionRecord, error) {
	var r core.SessionRecord
	err := s.r.WithContext(ctx).Raw(`SELECT `+sessionRecordCols+` FROM session_records WHERE id = ?`, id).
		Row().Scan(sessionRecordDest(&r)...)
	if err != nil {
		return core.SessionRecord{}, notFound(fmt.Sprintf("session record %d", id), err)
	}
	return r, nil
}

// SessionRecordsSince returns the conversation's records that were active
// at or after since (started then, or ended then, or not ended), oldest
// first: their ids and times only (no summary, mood or stack).
func (s *Sessions) SessionRecordsSince(ctx context.Context, conversationID int64, since time.Time) ([]core.SessionRecord, error) {
	t := s.q.t(since)
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+sessionRecordSpanCols+` FROM session_records
		WHERE conversation_id = ? AND (started_at >= ? OR ended_at IS NULL OR ended_at >= ?)
		ORDER BY started_at, id`, []any{conversationID, t, t}, sessionRecordDest)
	if err != nil {
		return nil, fmt.Errorf("reading session records of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// PreviousSessionRecord returns the conversation's newest record that
// started before before (core.ErrNotFound when there is none): its id and
// times only.
func (s *Sessions) PreviousSessionRecord(ctx context.Context, conversationID int64, before time.Time) (core.SessionRecord, error) {
	var r core.SessionRecord
	err := s.r.WithContext(ctx).Raw(`SELECT `+sessionRecordSpanCols+` FROM session_records
		WHERE conversation_id = ? AND started_at < ? ORDER BY started_at DESC, id DESC LIMIT 1`, conversationID, s.q.t(before)).
		Row().Scan(sessionRecordDest(&r)...)
	if err != nil {
		return core.SessionRecord{}, notFound(fmt.Sprintf("session record before %s", before.Format(time.RFC3339)), err)
	}
	return r, nil
}

// SummarizedRecords returns up to limit of the conversation's records that
// started before before and have a summary, newest first (without their
// mood and stack).
func (s *Sessions) SummarizedRecords(ctx context.Context, conversationID int64, before time.Time, limit int) ([]core.SessionRecord, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+sessionRecordSummaryCols+` FROM session_records
		WHERE conversation_id = ? AND started_at < ? AND summary <> '' ORDER BY started_at DESC, id DESC LIMIT ?`,
		[]any{conversationID, s.q.t(before), limit}, sessionRecordDest)
	if err != nil {
		return nil, fmt.Errorf("reading summaries of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// FreezePrompt stores prompt as the record's prompt stack unless it has
// one already, and returns the one it keeps: two processes building the
// first turn of a record at once end up with the same stack.
func (s *Sessions) FreezePrompt(ctx context.Context, recordID int64, prompt string) (string, error) {
	var kept string
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.q.t(s.now())
		res := tx.Exec(`UPDATE session_records SET prompt = ?, updated_at = ? WHERE id = ? AND prompt = ''`,
			prompt, now, recordID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 1 {
			// Ours is the first: no need to read it back.
			kept = prompt
			return nil
		}
		return tx.Raw(`SELECT prompt FROM session_records WHERE id = ?`, recordID).Row().Scan(&kept)
	})
	if err != nil {
		return "", fmt.Errorf("storing the prompt of session record %d: %w", recordID, notFound("session record", err))
	}
	return kept, nil
}

// SetFinalMood stores the mood snapshot a record ends with (so far).
func (s *Sessions) SetFinalMood(ctx context.Context, recordID int64, mood string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE session_records SET final_mood = ?, updated_at = ? WHERE id = ?`,
			mood, s.q.t(s.now()), recordID).Error
	})
	if err != nil {
		return fmt.Errorf("storing the final mood of session record %d: %w", recordID, err)
	}
	return nil
}

// RecordMessages returns a session record of the conversation and its
// messages by seq. A record of another conversation is core.ErrNotFound:
// a user can only ever read their own.
func (s *Sessions) RecordMessages(ctx context.Context, conversationID, recordID int64) (core.SessionRecord, []core.Message, error) {
	var r core.SessionRecord
	err := s.r.WithContext(ctx).Raw(`SELECT `+sessionRecordCols+` FROM session_records WHERE id = ? AND conversation_id = ?`,
		recordID, conversationID).Row().Scan(sessionRecordDest(&r)...)
	if err != nil {
		return core.SessionRecord{}, nil, notFound(fmt.Sprintf("session record %d", recordID), err)
	}
	msgs, err := queryAll(s.r.WithContext(ctx), `SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? AND session_record_id = ? ORDER BY seq`, []any{conversationID, recordID}, messageDest)
	if err != nil {
		return core.SessionRecord{}, nil, fmt.Errorf("reading session record %d: %w", recordID, err)
	}
	return r, msgs, nil
}

// ClaimEndedRecords takes up to limit records (of the view's bot's
// conversations) that are over and have no
// summary yet: ended ones, and current ones whose conversation has been
// quiet for longer than gap at now (their end is found by the clock, not
// only by the next message). A claimed record gets summarized_at now and
// ended_at (its last message, if it had none); give it back with
// ReleaseRecord when summarising fails.
func (s *Sessions) ClaimEndedRecords(ctx context.Context, now time.Time, gap time.Duration, limit int) ([]core.SessionRecord, error) {
	var out []core.SessionRecord
	t := s.q.t(now)
	quietSince := s.q.t(now.Add(-gap))
	cond, botArgs := s.botCond(`c.bot_id`)
	args := append(append([]any{t, t, quietSince}, botArgs...), limit)
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		pick := `SELECT r.id FROM session_records r JOIN conversations c ON c.id = r.conversation_id
			WHERE r.summarized_at IS NULL AND (r.ended_at IS NOT NULL OR c.current_record_id <> r.id OR c.last_message_at < ?)` + cond + `
			ORDER BY r.id LIMIT ?`
		if !s.q.sqlite {
			pick += ` FOR UPDATE OF r SKIP LOCKED`
		}
		out, err = queryAll(tx, `UPDATE session_records SET summarized_at = ?, updated_at = ?,
				ended_at = COALESCE(ended_at, (SELECT c.last_message_at FROM conversations c WHERE c.id = session_records.conversation_id))
			WHERE id IN (`+pick+`) RETURNING `+sessionRecordCols, args, sessionRecordDest)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming ended session records: %w", err)
	}
	return out, nil
}

// SaveSummary stores a record's summary.
func (s *Sessions) SaveSummary(ctx context.Context, recordID int64, summary string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE session_records SET summary = ?, updated_at = ? WHERE id = ?`, summary, s.q.t(s.now()), recordID).Error
	})
	if err != nil {
		return fmt.Errorf("storing the summary of session record %d: %w", recordID, err)
	}
	return nil
}

// ReleaseRecord gives a claimed record back to be summarised later.
func (s *Sessions) ReleaseRecord(ctx context.Context, recordID int64) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE session_records SET summarized_at = NULL WHERE id = ?`, recordID).Error
	})
	if err != nil {
		return fmt.Errorf("releasing session record %d: %w", recordID, err)
	}
	return nil
}

// EndSessionRecord ends the conversation's current session record at at
// and leaves the conversation without one, so that its next message
// starts a new record: a fresh window for the model (/new). The ended
// record is summarised like any other (ClaimEndedRecords takes it). It
// returns the id of the record it ended, nil when the conversation had
// none; core.ErrNotFound for an unknown conversation.
func (s *Sessions) EndSessionRecord(ctx context.Context, conversationID int64, at time.Time) (*int64, error) {
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
