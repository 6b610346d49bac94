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

// ClaimDueJobs marks up to limit jobs (of the view's bot) of the given kinds as sending for
// owner until leaseUntil and returns them: pending jobs that are due, and
// sending jobs whose lease expired (their process died). Given platforms,
// only jobs of conversations on them are taken (parley chat sends the
// terminal's, parley run the rest). One statement
// picks and marks them, so no two claimers get the same job.
func (s *JobQueue) ClaimDueJobs(ctx context.Context, owner string, now, leaseUntil time.Time, kinds []core.JobKind, limit int, platforms ...core.Platform) ([]core.Job, error) {
	if len(kinds) == 0 || limit <= 0 {
		return nil, nil
	}
	q, args := s.jobClaim(owner, now, leaseUntil, kinds, limit, platforms)
	var out []core.Job
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = queryAll(tx, q, args, jobDest)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming due jobs: %w", err)
	}
	return out, nil
}

// jobClaim is ClaimDueJobs' statement and its arguments.
func (s *JobQueue) jobClaim(owner string, now, leaseUntil time.Time, kinds []core.JobKind, limit int,
	platforms []core.Platform) (string, []any) {
	t := s.q.t(now)
	// The bot's condition is repeated in each branch of the OR, so that
	// each is a range of jobs_bot_status_due (SQLite's multi-index OR,
	// PostgreSQL's BitmapOr): outside it, the bot's every job, sent ones
	// included, would be walked.
	bot, botArgs := s.botCond(`bot_id`)
	scope, scopeArgs := platformScope(platforms)
	pick := `SELECT id FROM jobs WHERE kind IN ? AND ((status = 'pending'` + bot + ` AND due_at <= ?)
		OR (status = 'sending'` + bot + ` AND lease_until < ?))` + scope + ` ORDER BY due_at, id LIMIT ?`
	if !s.q.sqlite {
		pick += ` FOR UPDATE SKIP LOCKED`
	}
	args := append([]any{owner, s.q.t(leaseUntil), t, kindNames(kinds)}, botArgs...)
	args = append(append(append(args, t), botArgs...), t)
	args = append(append(args, scopeArgs...), limit)
	return `UPDATE jobs SET status = 'sending', owner = ?, lease_until = ?, updated_at = ?
		WHERE id IN (` + pick + `) RETURNING ` + jobCols, args
}

// NextJobDue is when the next job of the given kinds becomes claimable
// (a pending job's due time or a sending job's lease end), nil if never.
func (s *JobQueue) NextJobDue(ctx context.Context, kinds []core.JobKind, platforms ...core.Platform) (*time.Time, error) {
	names := kindNames(kinds)
	scope, scopeArgs := s.jobScope(platforms)
	args := append(append([]any{names}, scopeArgs...), names)
	args = append(args, scopeArgs...)
	var a, b *time.Time
	err := s.r.WithContext(ctx).Raw(`SELECT
			(SELECT MIN(due_at) FROM jobs WHERE status = 'pending' AND kind IN ?`+scope+`),
			(SELECT MIN(lease_until) FROM jobs WHERE status = 'sending' AND kind IN ?`+scope+`)`, args...).
		Row().Scan(nullTimeCol{&a}, nullTimeCol{&b})
	if err != nil {
		return nil, fmt.Errorf("reading the next job time: %w", err)
	}
	if a == nil || (b != nil && b.Before(*a)) {
		return b, nil
	}
	return a, nil
}

// ReleaseJob hands a job owner holds back: pending again at dueAt, or
// cancelled or failed, with note as its last error. It reports false when
// the job was no longer owner's.
func (s *JobQueue) ReleaseJob(ctx context.Context, id int64, owner string, status core.JobStatus, dueAt time.Time, note string) (bool, error) {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE jobs SET status = ?, due_at = ?, last_error = ?, owner = '', lease_until = NULL, updated_at = ?
			WHERE id = ? AND status = 'sending' AND owner = ?`, string(status), s.q.t(dueAt), note, s.q.t(s.now()), id, owner)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return false, fmt.Errorf("releasing job %d: %w", id, err)
	}
	return n == 1, nil
}

// PlanJobRun plans the queued run that executes a proactive job owner
// holds, unless the job went stale: it is cancelled when the
// conversation's current session record is no longer the job's, or the
// user wrote after it was requested. The run expects the newest message to
// stay the newest, so it is skipped if anything is said before it starts.
// A conversation that already has a queued run leaves the job pending
// until retryAt.
func (s *JobQueue) PlanJobRun(ctx context.Context, job core.Job, owner string, now, retryAt time.Time) (core.JobPlan, error) {
	var plan core.JobPlan
	t := s.q.t(now)
	err := s.write(ctx, func(tx *gorm.DB) error {
		plan = core.JobPlan{}
		var current sql.NullInt64
		var wrote bool
		err := tx.Raw(`SELECT c.current_record_id, EXISTS (SELECT 1 FROM messages m
				WHERE m.conversation_id = c.id AND m.seq > ? AND m.role = 'user' AND m.source <> 'command')
			FROM conversations c WHERE c.id = ?`, job.AfterSeq, job.ConversationID).Row().Scan(&current, &wrote)
		if errors.Is(err, sql.ErrNoRows) {
			plan.Dropped = "the conversation is gone"
		} else if err != nil {
			return fmt.Errorf("reading the conversation: %w", err)
		}
		switch {
		case plan.Dropped != "":
		case job.SessionRecordID != nil && (!current.Valid || current.Int64 != *job.SessionRecordID):
			plan.Dropped = "dropped: a newer session record exists"
		case wrote:
			plan.Dropped = "dropped: the user wrote since"
		}
		if plan.Dropped != "" {
			return tx.Exec(`UPDATE jobs SET status = 'cancelled', last_error = ?, owner = '', lease_until = NULL, updated_at = ?
				WHERE id = ? AND status = 'sending' AND owner = ?`, plan.Dropped, t, job.ID, owner).Error
		}
		var runID int64
		err = tx.Raw(`INSERT INTO runs (conversation_id, bot_id, kind, status, expected_last_message_id, run_after, job_id, created_at, updated_at)
			VALUES (?, `+botOf+`, 'proactive', 'queued', (SELECT id FROM messages WHERE conversation_id = ? AND source <> 'command'
				ORDER BY seq DESC LIMIT 1), ?, ?, ?, ?)
			ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING RETURNING id`,
			job.ConversationID, job.ConversationID, job.ConversationID, t, job.ID, t, t).Row().Scan(&runID)
		if errors.Is(err, sql.ErrNoRows) {
			plan.Busy = true
			return tx.Exec(`UPDATE jobs SET status = 'pending', due_at = ?, owner = '', lease_until = NULL, updated_at = ?
				WHERE id = ? AND status = 'sending' AND owner = ?`, s.q.t(retryAt), t, job.ID, owner).Error
		}
		if err != nil {
			return fmt.Errorf("planning the run: %w", err)
		}
		plan.RunID = runID
		return tx.Exec(`UPDATE jobs SET attempts = attempts + 1, updated_at = ? WHERE id = ?`, t, job.ID).Error
	})
	if err != nil {
		return core.JobPlan{}, fmt.Errorf("planning the run of job %d: %w", job.ID, err)
	}
	return plan, nil
}

// settleJob applies a finished run's outcome to its job, inside the
// transaction that finishes the run.
func (s *dbs) settleJob(tx *gorm.DB, jobID int64, o *core.JobOutcome, sentID string, now any) error {
	due := any(nil)
	if !o.DueAt.IsZero() {
		due = s.q.t(o.DueAt)
	}
	sentAt := any(nil)
	if o.Status == core.JobSent {
		sentAt = now
	}
	err := tx.Exec(`UPDATE jobs SET status = ?, due_at = COALESCE(?, due_at), last_error = ?, sent_at = COALESCE(?, sent_at),
			platform_message_id = CASE WHEN ? <> '' THEN ? ELSE platform_message_id END,
			owner = '', lease_until = NULL, updated_at = ?
		WHERE id = ?`, string(o.Status), due, o.Error, sentAt, sentID, sentID, now, jobID).Error
	if err != nil {
		return fmt.Errorf("settling job %d: %w", jobID, err)
	}
	return nil
}

// insertJobs creates the jobs a finished run asked for, after its messages
// (afterSeq is the conversation's newest seq by then).
func (s *dbs) insertJobs(tx *gorm.DB, convID, afterSeq int64, jobs []core.Job, now any) error {
	for i := range jobs {
		j := &jobs[i]
		j.ConversationID, j.AfterSeq = convID, afterSeq
		if err := tx.Raw(`INSERT INTO jobs (conversation_id, bot_id, kind, status, text, name, due_at, origin, session_record_id, after_seq, created_at, updated_at)
			VALUES (?, `+botOf+`, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, convID, convID, string(j.Kind), j.Text, j.Name, s.q.t(j.DueAt),
			j.Origin, nid(j.SessionRecordID), afterSeq, now, now).Row().Scan(&j.ID); err != nil {
			return fmt.Errorf("creating job: %w", err)
		}
		j.Status = core.JobPending
	}
	return nil
}

func kindNames(kinds []core.JobKind) []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return names
}

// jobScope limits a jobs query to the view's bot's jobs (walking
// jobs_bot_status_due) and to conversations on platforms (none: all).
func (s *dbs) jobScope(platforms []core.Platform) (string, []any) {
	scope, args := s.botCond(`jobs.bot_id`)
	ps, psArgs := platformScope(platforms)
	return scope + ps, append(args, psArgs...)
}

// platformScope limits a jobs query to conversations on platforms (none:
// all).
func platformScope(platforms []core.Platform) (string, []any) {
	ps := platformNames(platforms)
	if len(ps) == 0 {
		return "", nil
	}
	return ` AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = jobs.conversation_id AND c.platform IN ?)`, []any{ps}
}
