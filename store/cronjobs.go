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

// StartCronTurn plans the cron_turn run of a recurring job owner holds
// and moves the job on to c.Next, in one transaction:
//
//   - the run is queued for c.Occurrence unless the occurrence already has
//     one: runs_job_occurrence makes (job, occurrence) unique, so two
//     schedulers that both hold the job (one's lease ran out mid-way) plan
//     it once;
//   - a conversation with a queued run already (runs_one_queued) keeps the
//     job, occurrence and all, until c.RetryAt;
//   - a job no longer owner's (cancelled meanwhile) is left alone.
func (s *JobQueue) StartCronTurn(ctx context.Context, job core.Job, owner string, c core.CronStart) (core.CronPlan, error) {
	var plan core.CronPlan
	t := s.q.t(c.Now)
	err := s.write(ctx, func(tx *gorm.DB) error {
		plan = core.CronPlan{}
		// Locks the job's row on PostgreSQL until commit.
		var held int64
		err := tx.Raw(`UPDATE jobs SET updated_at = ? WHERE id = ? AND status = 'sending' AND owner = ? RETURNING id`,
			t, job.ID, owner).Row().Scan(&held)
		if errors.Is(err, sql.ErrNoRows) {
			plan.Lost = true
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the job: %w", err)
		}
		if c.Occurrence != nil {
			occ := s.q.t(*c.Occurrence)
			var runID int64
			err := tx.Raw(`INSERT INTO runs (conversation_id, bot_id, kind, status, run_after, job_id, occurrence_at, created_at, updated_at)
				VALUES (?, `+botOf+`, 'cron_turn', 'queued', ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`,
				job.ConversationID, job.ConversationID, t, job.ID, occ, t, t).Row().Scan(&runID)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				var done bool
				if err := tx.Raw(`SELECT EXISTS (SELECT 1 FROM runs WHERE job_id = ? AND occurrence_at = ?)`, job.ID, occ).
					Row().Scan(&done); err != nil {
					return fmt.Errorf("looking for the occurrence's run: %w", err)
				}
				if !done {
					plan.Busy = true
					return tx.Exec(`UPDATE jobs SET status = 'pending', due_at = ?, owner = '', lease_until = NULL, updated_at = ?
						WHERE id = ?`, s.q.t(c.RetryAt), t, job.ID).Error
				}
				plan.Duplicate = true
			case err != nil:
				return fmt.Errorf("planning the run: %w", err)
			default:
				plan.RunID = runID
			}
		}
		ran := 0
		if plan.RunID != 0 {
			ran = 1
		}
		next := s.q.t(c.Next)
		return tx.Exec(`UPDATE jobs SET status = 'pending', next_run_at = ?, due_at = ?, attempts = attempts + ?,
				last_error = ?, owner = '', lease_until = NULL, updated_at = ?
			WHERE id = ?`, next, next, ran, c.Note, t, job.ID).Error
	})
	if err != nil {
		return core.CronPlan{}, fmt.Errorf("starting a cron turn of job %d: %w", job.ID, err)
	}
	return plan, nil
}

// appendTrigger bumps the conversation's last_seq and notes the message's
// time like RecordInbound's upsert: prev_message_at comes back as the time
// of the message before it.
const appendTrigger = `UPDATE conversations SET last_seq = last_seq + 1, prev_message_at = last_message_at,
		last_message_at = ?, updated_at = ?
	WHERE id = ? RETURNING ` + conversationCols + `, prev_message_at`

// AppendTrigger appends a cron turn's trigger event m to its conversation
// as RecordInbound appends a user message: with the next seq, in the
// current session record or, after more than gap of quiet (0: never), a
// new one. It sets m's ID, Seq, SessionRecordID and CreatedAt (the store's
// clock when zero) and returns the conversation as it now is.
func (s *JobQueue) AppendTrigger(ctx context.Context, m *core.Message, gap time.Duration) (core.Conversation, error) {
	meta, err := encodeMetadata(m.Metadata)
	if err != nil {
		return core.Conversation{}, fmt.Errorf("appending a trigger: %w", err)
	}
	msg := *m
	if msg.CreatedAt.IsZero() {
		msg.CreatedAt = s.now()
	}
	msg.CreatedAt = utc(msg.CreatedAt)
	now := s.q.t(msg.CreatedAt)
	var conv core.Conversation
	err = s.write(ctx, func(tx *gorm.DB) error {
		var res core.InboundResult
		var prev *time.Time
		dest := append(conversationDest(&res.Conversation), nullTimeCol{&prev})
		err := tx.Raw(appendTrigger, now, now, msg.ConversationID).Row().Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("conversation %d: %w", msg.ConversationID, core.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("assigning seq: %w", err)
		}
		if err := s.joinRecord(tx, &res, prev, msg.CreatedAt, gap, now); err != nil {
			return err
		}
		msg.Seq, msg.SessionRecordID = res.Conversation.LastSeq, res.Conversation.CurrentRecordID
		conv = res.Conversation
		return s.insertMessage(tx, &msg, meta, now)
	})
	if err != nil {
		return core.Conversation{}, fmt.Errorf("appending a trigger: %w", err)
	}
	*m = msg
	return conv, nil
}
