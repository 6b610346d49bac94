package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/loop"
)

// The job loop runs proactive follow-ups (JobProactive): a model's wish,
// from a control token, to write to the user first, later. At its due time
// a follow-up is dropped if the user wrote since it was requested or a
// newer session record began; deferred to the end of the user's quiet
// hours (ProactivePolicy); otherwise it becomes a queued run of kind
// proactive, whose outcome settles the job in the transaction that
// finishes the run.

const (
	// jobBusyRetry is when a follow-up is tried again after finding its
	// conversation with a turn already queued.
	jobBusyRetry = time.Minute
	// jobClaimBatch bounds the jobs claimed at once: large, so that a
	// second's worth of due messages is claimed in one statement.
	jobClaimBatch = 512
)

// jobStep claims due jobs and sleeps until the next one is due (or, for
// jobs other processes create, at most PollInterval); Wake wakes it
// early. It reads the next due time before it claims: most looks find
// nothing due, and a claim is a write transaction (with a hundred bots, a
// claim each every poll interval).
func (e *Engine) jobStep(ctx context.Context) time.Duration {
	if e.isStopping() || ctx.Err() != nil {
		return loop.Forever
	}
	if next, ok := e.nextJob(ctx); ok && (next == nil || next.After(e.cfg.Clock.Now())) {
		return e.waitFor(next)
	}
	e.runDueJobs(ctx)
	next, _ := e.nextJob(ctx)
	return e.waitFor(next)
}

// nextJob is when the next job this loop serves is claimable (nil:
// none); ok is false when it could not be read.
func (e *Engine) nextJob(ctx context.Context) (next *time.Time, ok bool) {
	next, err := e.cfg.Store.NextJobDue(ctx, e.cfg.Kinds, e.platforms...)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("reading the next job time", "err", err)
		}
		return nil, false
	}
	return next, true
}

// waitFor is how long to sleep for a job claimable at next: until then,
// at most PollInterval (jobs other processes create).
func (e *Engine) waitFor(next *time.Time) time.Duration {
	wait := e.cfg.PollInterval
	if next != nil {
		wait = min(wait, max(next.Sub(e.cfg.Clock.Now()), 0))
	}
	return wait
}

func (e *Engine) runDueJobs(ctx context.Context) {
	if !e.roomToClaim(ctx) {
		return
	}
	now := e.cfg.Clock.Now().UTC()
	jobs, err := e.cfg.Store.ClaimDueJobs(ctx, e.cfg.Owner, now, now.Add(e.cfg.JobLease), e.cfg.Kinds, maxInFlight-e.SendsInFlight(), e.platforms...)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("claiming due jobs", "err", err)
		}
		return
	}
	var sends []core.Job
	for _, j := range jobs {
		switch j.Kind {
		case core.JobMessage:
			sends = append(sends, j)
		case core.JobAgentTurn:
			if err := e.startCronTurn(ctx, j, now); err != nil && ctx.Err() == nil {
				e.log.Error("starting a cron turn", "job", j.ID, "conversation", j.ConversationID, "err", err)
			}
		default:
			if err := e.startFollowUp(ctx, j, now); err != nil && ctx.Err() == nil {
				e.log.Error("starting a proactive follow-up", "job", j.ID, "conversation", j.ConversationID, "err", err)
			}
		}
	}
	e.sendScheduled(ctx, sends)
}

// startFollowUp turns a due proactive job into a queued run, or drops,
// defers or fails it.
func (e *Engine) startFollowUp(ctx context.Context, j core.Job, now time.Time) error {
	log := e.log.With("job", j.ID, "conversation", j.ConversationID)
	release := func(status core.JobStatus, due time.Time, note string) error {
		if _, err := e.cfg.Store.ReleaseJob(ctx, j.ID, e.cfg.Owner, status, due, note); err != nil {
			return err
		}
		log.Info("proactive follow-up "+string(status), "note", note, "due", due)
		return nil
	}
	if e.cfg.Proactive == nil {
		return release(core.JobCancelled, j.DueAt, "dropped: the proactive plugin is disabled")
	}
	if j.Attempts >= e.cfg.JobMaxAttempts {
		return release(core.JobFailed, j.DueAt, fmt.Sprintf("failed after %d attempts: %s", j.Attempts, j.LastError))
	}
	conv, err := e.cfg.Store.Conversation(ctx, j.ConversationID)
	if core.IsNotFound(err) {
		return release(core.JobCancelled, j.DueAt, "dropped: the conversation is gone")
	}
	if err != nil {
		return fmt.Errorf("loading conversation: %w", err)
	}
	if due := e.cfg.Proactive.ProactiveDue(conv, core.LocationOf(conv, e.cfg.Location), now); due.After(now) {
		return release(core.JobPending, due, "deferred to the end of the user's quiet hours")
	}
	plan, err := e.cfg.Store.PlanJobRun(ctx, j, e.cfg.Owner, now, now.Add(jobBusyRetry))
	if err != nil {
		return err
	}
	switch {
	case plan.Dropped != "":
		log.Info("proactive follow-up dropped", "why", plan.Dropped)
	case plan.Busy:
		log.Debug("proactive follow-up waits: the conversation has a turn queued")
	default:
		log.Debug("proactive follow-up planned", "run", plan.RunID)
		e.signal()
	}
	return nil
}
