package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// ClaimFactWork takes up to limit conversations with messages the fact
// engine has not read, moving their facts_seq to their last_seq. The
// conversations are looked for on a reader (a scan of every conversation
// must not hold SQLite's one writer); a conversation another process
// claimed meanwhile is not taken, so no two read the same messages.
func (s *Memory) ClaimFactWork(ctx context.Context, limit int) ([]core.FactWork, error) {
	var rows []struct {
		ID, FactsSeq, LastSeq int64
	}
	if err := s.r.WithContext(ctx).Raw(`SELECT id, facts_seq, last_seq FROM conversations
		WHERE last_seq > facts_seq ORDER BY id LIMIT ?`, limit).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("looking for fact work: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var out []core.FactWork
	err := s.write(ctx, func(tx *gorm.DB) error {
		out = out[:0]
		for _, r := range rows {
			res := tx.Exec(`UPDATE conversations SET facts_seq = ? WHERE id = ? AND facts_seq = ?`, r.LastSeq, r.ID, r.FactsSeq)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				out = append(out, core.FactWork{ConversationID: r.ID, FromSeq: r.FactsSeq, ToSeq: r.LastSeq})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claiming fact work: %w", err)
	}
	return out, nil
}

// ReleaseFactWork hands claimed work back (the model was down): facts_seq
// returns to w.FromSeq unless it moved on meanwhile.
func (s *Memory) ReleaseFactWork(ctx context.Context, w core.FactWork) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE conversations SET facts_seq = ? WHERE id = ? AND facts_seq = ?`, w.FromSeq, w.ConversationID, w.ToSeq).Error
	})
	if err != nil {
		return fmt.Errorf("releasing fact work: %w", err)
	}
	return nil
}

// MessagesBetween returns the conversation's messages with from < seq <=
// to, by seq, at most limit (the newest of them).
func (s *Memory) MessagesBetween(ctx context.Context, conversationID, from, to int64, limit int) ([]core.Message, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? AND seq > ? AND seq <= ? ORDER BY seq DESC LIMIT ?`, []any{conversationID, from, to, limit}, messageDest)
	if err != nil {
		return nil, fmt.Errorf("reading messages of conversation %d: %w", conversationID, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// ClaimEndedRecords takes up to limit records that are over and have no
// summary yet: ended ones, and current ones whose conversation has been
// quiet for longer than gap at now (their end is found by the clock, not
// only by the next message). A claimed record gets summarized_at now and
// ended_at (its last message, if it had none); give it back with
// ReleaseRecord when summarising fails.
func (s *Memory) ClaimEndedRecords(ctx context.Context, now time.Time, gap time.Duration, limit int) ([]core.SessionRecord, error) {
	var out []core.SessionRecord
	t := s.q.t(now)
	quietSince := s.q.t(now.Add(-gap))
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		pick := `SELECT r.id FROM session_records r JOIN conversations c ON c.id = r.conversation_id
			WHERE r.summarized_at IS NULL AND (r.ended_at IS NOT NULL OR c.current_record_id <> r.id OR c.last_message_at < ?)
			ORDER BY r.id LIMIT ?`
		if !s.q.sqlite {
			pick += ` FOR UPDATE OF r SKIP LOCKED`
		}
		out, err = queryAll(tx, `UPDATE session_records SET summarized_at = ?, updated_at = ?,
				ended_at = COALESCE(ended_at, (SELECT c.last_message_at FROM conversations c WHERE c.id = session_records.conversation_id))
			WHERE id IN (`+pick+`) RETURNING `+sessionRecordCols, []any{t, t, quietSince, limit}, sessionRecordDest)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming ended session records: %w", err)
	}
	return out, nil
}

// SaveSummary stores a record's summary.
func (s *Memory) SaveSummary(ctx context.Context, recordID int64, summary string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE session_records SET summary = ?, updated_at = ? WHERE id = ?`, summary, s.q.t(s.now()), recordID).Error
	})
	if err != nil {
		return fmt.Errorf("storing the summary of session record %d: %w", recordID, err)
	}
	return nil
}

// ReleaseRecord gives a claimed record back to be summarised later.
func (s *Memory) ReleaseRecord(ctx context.Context, recordID int64) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE session_records SET summarized_at = NULL WHERE id = ?`, recordID).Error
	})
	if err != nil {
		return fmt.Errorf("releasing session record %d: %w", recordID, err)
	}
	return nil
}
