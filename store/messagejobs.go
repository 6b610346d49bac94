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

// CompleteMessageJob stores m, the text a message job sent, in its
// conversation (the next seq, the current session record) and marks the
// job sent with the message's platform id, in one transaction. It reports
// false and writes nothing when the job is no longer owner's (its lease ran
// out and another process took it).
func (s *JobQueue) CompleteMessageJob(ctx context.Context, jobID int64, owner string, m *core.Message) (bool, error) {
	meta, err := encodeMetadata(m.Metadata)
	if err != nil {
		return false, err
	}
	msg := *m
	if msg.CreatedAt.IsZero() {
		msg.CreatedAt = s.now()
	}
	msg.CreatedAt = utc(msg.CreatedAt)
	t := s.q.t(msg.CreatedAt)
	ours := false
	err = s.write(ctx, func(tx *gorm.DB) error {
		ours = false
		var conv int64
		err := tx.Raw(`UPDATE jobs SET status = 'sent', sent_at = ?, platform_message_id = ?, attempts = attempts + 1,
				last_error = '', owner = '', lease_until = NULL, updated_at = ?
			WHERE id = ? AND status = 'sending' AND owner = ? RETURNING conversation_id`,
			t, msg.PlatformMessageID, t, jobID, owner).Row().Scan(&conv)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ours = true
		seq, record, err := reserveSeqs(tx, conv, 1, t)
		if err != nil {
			return err
		}
		if record == nil && msg.SessionRecordID == nil {
			// The first message of a conversation the API opened: it
			// starts the record the user's answer joins.
			id, err := s.startRecord(tx, conv, msg.CreatedAt, t)
			if err != nil {
				return err
			}
			record = &id
		}
		msg.ConversationID, msg.Seq = conv, seq
		if msg.SessionRecordID == nil {
			msg.SessionRecordID = record
		}
		return s.insertMessage(tx, &msg, meta, t)
	})
	if err != nil {
		return false, fmt.Errorf("completing job %d: %w", jobID, err)
	}
	if ours {
		*m = msg
	}
	return ours, nil
}

// FailJobAttempt counts a failed attempt of a job owner holds and sets it
// to status with note: pending again at dueAt, or failed.
func (s *JobQueue) FailJobAttempt(ctx context.Context, id int64, owner string, status core.JobStatus, dueAt time.Time, note string) (bool, error) {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE jobs SET status = ?, due_at = ?, last_error = ?, attempts = attempts + 1, owner = '',
				lease_until = NULL, updated_at = ?
			WHERE id = ? AND status = 'sending' AND owner = ?`, string(status), s.q.t(dueAt), note, s.q.t(s.now()), id, owner)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("recording a failed attempt of job %d: %w", id, err)
	}
	return n == 1, nil
}

// checkPending refuses, with core.ErrTooManyPending, a new message job for
// a conversation that already has max waiting.
func checkPending(tx *gorm.DB, convID int64, max int) error {
	var pending int64
	if err := tx.Raw(`SELECT COUNT(*) FROM jobs WHERE conversation_id = ? AND kind = 'message' AND status IN ('pending', 'sending')`,
		convID).Row().Scan(&pending); err != nil {
		return err
	}
	if pending >= int64(max) {
		return core.ErrTooManyPending
	}
	return nil
}
