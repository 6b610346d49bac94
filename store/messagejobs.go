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
func (s *Store) CompleteMessageJob(ctx context.Context, jobID int64, owner string, m *core.Message) (bool, error) {
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
func (s *Store) FailJobAttempt(ctx context.Context, id int64, owner string, status core.JobStatus, dueAt time.Time, note string) (bool, error) {
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

// ConversationJobs returns a conversation's jobs of kind with one of the
// statuses (all when none given), by due time.
func (s *Store) ConversationJobs(ctx context.Context, conversationID int64, kind core.JobKind, statuses ...core.JobStatus) ([]core.Job, error) {
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

// ScheduleMessage creates a pending message job for a conversation, first
// cancelling its pending message jobs when replace is set, refusing when
// the conversation already has max pending (core.ErrTooManyPending). It
// returns the ids it cancelled.
func (s *Store) ScheduleMessage(ctx context.Context, j *core.Job, replace bool, max int) ([]int64, error) {
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
		return tx.Raw(`INSERT INTO jobs (conversation_id, kind, status, text, name, due_at, origin, created_by_tool_call_id,
			format, created_at, updated_at)
			VALUES (?, 'message', 'pending', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, job.ConversationID, job.Text, job.Name,
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

// CancelJob cancels a pending job of the conversation, noting the tool call
// that did it. Another conversation's job is core.ErrNotFound; one that is
// no longer pending is returned with core.ErrNotPending. A recurring job is
// cancelled while the scheduler holds it too: the scheduler then plans no
// run (StartCronTurn finds it no longer its own).
func (s *Store) CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error) {
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

// SetTimeZone records a conversation's IANA time zone.
func (s *Store) SetTimeZone(ctx context.Context, conversationID int64, zone string) error {
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

// Jobs lists jobs by id, newest first, at most limit: of one conversation
// when conversationID is not 0, with one status when status is not "".
func (s *Store) Jobs(ctx context.Context, conversationID int64, status core.JobStatus, limit int) ([]core.Job, error) {
	q := `SELECT ` + jobCols + ` FROM jobs WHERE 1 = 1`
	var args []any
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

// JobCounts returns how many jobs there are by kind and status.
func (s *Store) JobCounts(ctx context.Context) (map[[2]string]int64, error) {
	var rows []struct {
		Kind, Status string
		N            int64
	}
	if err := s.r.WithContext(ctx).Raw(`SELECT kind, status, COUNT(*) AS n FROM jobs GROUP BY kind, status`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("counting jobs: %w", err)
	}
	out := make(map[[2]string]int64, len(rows))
	for _, r := range rows {
		out[[2]string{r.Kind, r.Status}] = r.N
	}
	return out, nil
}

// QueueDepth reads the work waiting or under way: runs queued and running,
// and jobs due by now that no scheduler has taken yet.
func (s *Store) QueueDepth(ctx context.Context, now time.Time) (map[string]int64, error) {
	var queued, running, due int64
	err := s.r.WithContext(ctx).Raw(`SELECT
			(SELECT COUNT(*) FROM runs WHERE status = 'queued'),
			(SELECT COUNT(*) FROM runs WHERE status = 'running'),
			(SELECT COUNT(*) FROM jobs WHERE status = 'pending' AND due_at <= ?)`, s.q.t(now)).Row().Scan(&queued, &running, &due)
	if err != nil {
		return nil, fmt.Errorf("reading the queues: %w", err)
	}
	return map[string]int64{"runs_queued": queued, "runs_running": running, "jobs_due": due}, nil
}
