package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Schedules is what a conversation's user and tools schedule: messages
// for later, recurring jobs, their listing and cancelling, and the time
// zone they are read in.
type Schedules struct{ *dbs }

// ScheduleMessage creates a pending message job for a conversation, first
// cancelling its pending message jobs when replace is set, refusing when
// the conversation already has max pending (core.ErrTooManyPending). It
// returns the ids it cancelled.
func (s *Schedules) ScheduleMessage(ctx context.Context, j *core.Job, replace bool, max int) ([]int64, error) {
	job := *j
	job.Kind, job.Status = core.JobMessage, core.JobPending
	if job.CreatedAt.IsZero() {
		job.CreatedAt = s.now()
	}
	job.CreatedAt, job.DueAt = utc(job.CreatedAt), utc(job.DueAt)
	job.UpdatedAt = job.CreatedAt
	var cancelled []int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		cancelled = cancelled[:0]
		t := s.q.t(job.CreatedAt)
		if replace {
			if err := tx.Raw(`UPDATE jobs SET status = 'cancelled', cancelled_by_tool_call_id = ?, last_error = 'replaced', updated_at = ?
				WHERE conversation_id = ? AND kind = 'message' AND status = 'pending' RETURNING id`,
				job.CreatedByToolCallID, t, job.ConversationID).Scan(&cancelled).Error; err != nil {
				return err
			}
		}
		if err := checkPending(tx, job.ConversationID, max); err != nil {
			return err
		}
		return tx.Raw(`INSERT INTO jobs (conversation_id, bot_id, kind, status, text, name, due_at, origin, created_by_tool_call_id,
			format, created_at, updated_at)
			VALUES (?, `+botOf+`, 'message', 'pending', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, job.ConversationID, job.ConversationID, job.Text, job.Name,
			s.q.t(job.DueAt), job.Origin, job.CreatedByToolCallID, string(job.Format), t, t).Row().Scan(&job.ID)
	})
	if err != nil {
		if errors.Is(err, core.ErrTooManyPending) {
			return nil, err
		}
		return nil, fmt.Errorf("scheduling a message: %w", err)
	}
	*j = job
	return cancelled, nil
}

// CancelJob cancels a pending job of the conversation, noting the tool call
// that did it. Another conversation's job is core.ErrNotFound; one that is
// no longer pending is returned with core.ErrNotPending. A recurring job is
// cancelled while the scheduler holds it too: the scheduler then plans no
// run (StartCronTurn finds it no longer its own).
func (s *Schedules) CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error) {
	var j core.Job
	err := s.write(ctx, func(tx *gorm.DB) error {
		err := tx.Raw(`SELECT `+jobCols+` FROM jobs WHERE id = ? AND conversation_id = ?`, id, conversationID).Row().Scan(jobDest(&j)...)
		if err != nil {
			return err
		}
		if j.Status != core.JobPending && (j.Kind != core.JobAgentTurn || j.Status != core.JobSending) {
			return core.ErrNotPending
		}
		t := s.q.t(s.now())
		res := tx.Exec(`UPDATE jobs SET status = 'cancelled', cancelled_by_tool_call_id = ?, owner = '', lease_until = NULL, updated_at = ?
			WHERE id = ? AND status = ?`, toolCallID, t, id, string(j.Status))
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return core.ErrNotPending // it moved on since it was read
		}
		j.Status, j.CancelledByToolCallID = core.JobCancelled, toolCallID
		return nil
	})
	switch {
	case errors.Is(err, core.ErrNotPending):
		return j, err
	case err != nil:
		return core.Job{}, notFound(fmt.Sprintf("job %d", id), err)
	}
	return j, nil
}

// ConversationJobs returns a conversation's jobs of kind with one of the
// statuses (all when none given), by due time.
func (s *Schedules) ConversationJobs(ctx context.Context, conversationID int64, kind core.JobKind, statuses ...core.JobStatus) ([]core.Job, error) {
	q := `SELECT ` + jobCols + ` FROM jobs WHERE conversation_id = ? AND kind = ?`
	args := []any{conversationID, string(kind)}
	if len(statuses) > 0 {
		names := make([]string, len(statuses))
		for i, st := range statuses {
			names[i] = string(st)
		}
		q += ` AND status IN ?`
		args = append(args, names)
	}
	out, err := queryAll(s.r.WithContext(ctx), q+` ORDER BY due_at, id`, args, jobDest)
	if err != nil {
		return nil, fmt.Errorf("reading jobs of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// Jobs lists jobs by id, newest first, at most limit: of one conversation
// when conversationID is not 0 (else of the view's bot's), with one
// status when status is not "".
func (s *Schedules) Jobs(ctx context.Context, conversationID int64, status core.JobStatus, limit int) ([]core.Job, error) {
	q := `SELECT ` + jobCols + ` FROM jobs WHERE 1 = 1`
	var args []any
	if conversationID == 0 {
		cond, bot := s.botCond(`bot_id`)
		q += cond
		args = bot
	}
	if conversationID != 0 {
		q += ` AND conversation_id = ?`
		args = append(args, conversationID)
	}
	if status != "" {
		q += ` AND status = ?`
		args = append(args, string(status))
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	out, err := queryAll(s.r.WithContext(ctx), q, args, jobDest)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	return out, nil
}

// SetTimeZone records a conversation's IANA time zone.
func (s *Schedules) SetTimeZone(ctx context.Context, conversationID int64, zone string) error {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE conversations SET time_zone = ?, updated_at = ? WHERE id = ?`, zone, s.q.t(s.now()), conversationID)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("setting the time zone of conversation %d: %w", conversationID, err)
	}
	if n == 0 {
		return fmt.Errorf("setting the time zone of conversation %d: %w", conversationID, core.ErrNotFound)
	}
	return nil
}

// CreateRecurringJob inserts a pending recurring job (kind agent_turn) of
// j.ConversationID, due at its first occurrence j.DueAt, and sets its ID.
// A conversation with max enabled recurring jobs already gets
// core.ErrTooManyRecurring.
func (s *Schedules) CreateRecurringJob(ctx context.Context, j *core.Job, max int) error {
	job := *j
	job.Kind, job.Status = core.JobAgentTurn, core.JobPending
	if job.CreatedAt.IsZero() {
		job.CreatedAt = s.now()
	}
	if job.CatchUp == "" {
		job.CatchUp = core.CatchUpLatest
	}
	job.CreatedAt, job.DueAt = utc(job.CreatedAt), utc(job.DueAt)
	job.UpdatedAt = job.CreatedAt
	next := job.DueAt
	job.NextRunAt = &next
	err := s.write(ctx, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM jobs WHERE conversation_id = ? AND kind = 'agent_turn' AND status IN ('pending', 'sending')`,
			job.ConversationID).Row().Scan(&n); err != nil {
			return err
		}
		if n >= int64(max) {
			return core.ErrTooManyRecurring
		}
		t := s.q.t(job.CreatedAt)
		return tx.Raw(`INSERT INTO jobs (conversation_id, bot_id, kind, status, text, name, due_at, next_run_at, recurrence, catch_up,
				origin, created_by_tool_call_id, created_at, updated_at)
			VALUES (?, `+botOf+`, 'agent_turn', 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			job.ConversationID, job.ConversationID, job.Text, job.Name, s.q.t(job.DueAt), s.q.t(next), job.Recurrence, string(job.CatchUp),
			job.Origin, job.CreatedByToolCallID, t, t).Row().Scan(&job.ID)
	})
	if errors.Is(err, core.ErrTooManyRecurring) {
		return err
	}
	if err != nil {
		return fmt.Errorf("creating a recurring job: %w", err)
	}
	*j = job
	return nil
}

// MoveRecurringJob sets a pending recurring job's next occurrence (the
// conversation's time zone changed); false when it is not pending.
func (s *Schedules) MoveRecurringJob(ctx context.Context, id int64, next time.Time) (bool, error) {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		t := s.q.t(next)
		res := tx.Exec(`UPDATE jobs SET next_run_at = ?, due_at = ?, updated_at = ?
			WHERE id = ? AND kind = 'agent_turn' AND status = 'pending'`, t, t, s.q.t(s.now()), id)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("moving recurring job %d: %w", id, err)
	}
	return n == 1, nil
}
