package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
)

// JobQueue is the jobs the scheduler runs: claiming the due ones
// (jobclaim.go), planning their runs, completing message jobs
// (messagejobs.go) and cron turns (cronjobs.go), and counting them. It is
// core.JobStore.
type JobQueue struct{ *dbs }

// CreateJob inserts j and sets its ID (and CreatedAt/UpdatedAt from the
// store's clock when zero).
func (s *JobQueue) CreateJob(ctx context.Context, j *core.Job) error {
	job := *j
	if job.CreatedAt.IsZero() {
		job.CreatedAt = s.now()
	}
	if job.UpdatedAt.IsZero() {
		job.UpdatedAt = job.CreatedAt
	}
	job.DueAt, job.CreatedAt, job.UpdatedAt = utc(job.DueAt), utc(job.CreatedAt), utc(job.UpdatedAt)
	job.LeaseUntil, job.SentAt, job.NextRunAt = utcPtr(job.LeaseUntil), utcPtr(job.SentAt), utcPtr(job.NextRunAt)
	if job.CatchUp == "" {
		job.CatchUp = core.CatchUpLatest
	}
	err := s.w.WithContext(ctx).Raw(`INSERT INTO jobs (conversation_id, bot_id, kind, status, text, name, due_at,
			recurrence, attempts, last_error, origin, created_by_tool_call_id, cancelled_by_tool_call_id, owner,
			lease_until, platform_message_id, sent_at, session_record_id, after_seq, next_run_at, catch_up,
			format, image_url, idempotency_key, created_at, updated_at)
		VALUES (?, `+botOf+`, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		job.ConversationID, job.ConversationID, string(job.Kind), string(job.Status), job.Text, job.Name, s.q.t(job.DueAt),
		job.Recurrence, job.Attempts, job.LastError, job.Origin, job.CreatedByToolCallID,
		job.CancelledByToolCallID, job.Owner, s.q.nt(job.LeaseUntil), job.PlatformMessageID, s.q.nt(job.SentAt),
		nid(job.SessionRecordID), job.AfterSeq, s.q.nt(job.NextRunAt), string(job.CatchUp),
		string(job.Format), job.ImageURL, nullString(job.IdempotencyKey), s.q.t(job.CreatedAt), s.q.t(job.UpdatedAt)).Row().Scan(&job.ID)
	if err != nil && job.IdempotencyKey != "" && isUniqueViolation(err) {
		return fmt.Errorf("creating job: %w", errors.Join(core.ErrDuplicateJob, err))
	}
	if err != nil {
		return fmt.Errorf("creating job: %w", s.classify(err))
	}
	*j = job
	return nil
}

// Job returns a job by id.
func (s *JobQueue) Job(ctx context.Context, id int64) (core.Job, error) {
	var j core.Job
	err := s.r.WithContext(ctx).Raw(`SELECT `+jobCols+` FROM jobs WHERE id = ?`, id).Row().Scan(jobDest(&j)...)
	if err != nil {
		return core.Job{}, notFound(fmt.Sprintf("job %d", id), err)
	}
	return j, nil
}

// nullString is s, or NULL when it is empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// JobCounts returns how many jobs of the view's bot there are by kind and
// status.
func (s *JobQueue) JobCounts(ctx context.Context) (map[[2]string]int64, error) {
	var rows []struct {
		Kind, Status string
		N            int64
	}
	cond, args := s.botCond(`bot_id`)
	if err := s.r.WithContext(ctx).Raw(`SELECT kind, status, COUNT(*) AS n FROM jobs WHERE 1 = 1`+cond+` GROUP BY kind, status`,
		args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("counting jobs: %w", err)
	}
	out := make(map[[2]string]int64, len(rows))
	for _, r := range rows {
		out[[2]string{r.Kind, r.Status}] = r.N
	}
	return out, nil
}

// QueueDepth reads the work of the view's bot waiting or under way: runs
// queued and running, and jobs due by now that no scheduler has taken yet.
func (s *JobQueue) QueueDepth(ctx context.Context, now time.Time) (map[string]int64, error) {
	var queued, running, due int64
	cond, bot := s.botCond(`bot_id`)
	var args []any
	args = append(append(append(append(args, bot...), bot...), s.q.t(now)), bot...)
	err := s.r.WithContext(ctx).Raw(`SELECT
			(SELECT COUNT(*) FROM runs WHERE status = 'queued'`+cond+`),
			(SELECT COUNT(*) FROM runs WHERE status = 'running'`+cond+`),
			(SELECT COUNT(*) FROM jobs WHERE status = 'pending' AND due_at <= ?`+cond+`)`, args...).Row().Scan(&queued, &running, &due)
	if err != nil {
		return nil, fmt.Errorf("reading the queues: %w", err)
	}
	return map[string]int64{"runs_queued": queued, "runs_running": running, "jobs_due": due}, nil
}
