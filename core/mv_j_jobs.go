package core

import (
	"context"
	"fmt"
	"time"
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

// jobLoop claims due jobs and sleeps until the next one is due (or, for
// jobs other processes create, at most PollInterval); wakeJobs wakes it
// early.
func (d *Dispatcher) jobLoop(ctx context.Context) {
	defer close(d.jobsDone)
	for {
		if d.isStopping() {
			return
		}
		d.runDueJobs(ctx)
		timer := d.cfg.Clock.NewTimer(d.jobWait(ctx))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-d.jobWake.ch:
		case <-timer.C():
		}
		timer.Stop()
	}
}

func (d *Dispatcher) jobWait(ctx context.Context) time.Duration {
	wait := d.cfg.PollInterval
	next, err := d.cfg.Store.NextJobDue(ctx, d.jobKinds, d.platforms...)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("reading the next job time", "err", err)
		}
		return wait
	}
	if next != nil {
		wait = min(wait, max(next.Sub(d.cfg.Clock.Now()), 0))
	}
	return wait
}

// wakeJobs wakes the job loop without blocking.
func (d *Dispatcher) wakeJobs() { d.jobWake.Wake() }

func (d *Dispatcher) runDueJobs(ctx context.Context) {
	if !d.roomToClaim(ctx) {
		return
	}
	now := d.cfg.Clock.Now().UTC()
	jobs, err := d.cfg.Store.ClaimDueJobs(ctx, d.cfg.Owner, now, now.Add(d.cfg.JobLease), d.jobKinds, maxInFlight-d.SendsInFlight(), d.platforms...)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("claiming due jobs", "err", err)
		}
		return
	}
	var sends []Job
	for _, j := range jobs {
		switch j.Kind {
		case JobMessage:
			sends = append(sends, j)
		case JobAgentTurn:
			if err := d.startCronTurn(ctx, j, now); err != nil && ctx.Err() == nil {
				d.log.Error("starting a cron turn", "job", j.ID, "conversation", j.ConversationID, "err", err)
			}
		default:
			if err := d.startFollowUp(ctx, j, now); err != nil && ctx.Err() == nil {
				d.log.Error("starting a proactive follow-up", "job", j.ID, "conversation", j.ConversationID, "err", err)
			}
		}
	}
	d.sendScheduled(ctx, sends)
}

// startFollowUp turns a due proactive job into a queued run, or drops,
// defers or fails it.
func (d *Dispatcher) startFollowUp(ctx context.Context, j Job, now time.Time) error {
	log := d.log.With("job", j.ID, "conversation", j.ConversationID)
	release := func(status JobStatus, due time.Time, note string) error {
		if _, err := d.cfg.Store.ReleaseJob(ctx, j.ID, d.cfg.Owner, status, due, note); err != nil {
			return err
		}
		log.Info("proactive follow-up "+string(status), "note", note, "due", due)
		return nil
	}
	if d.proactive == nil {
		return release(JobCancelled, j.DueAt, "dropped: the proactive plugin is disabled")
	}
	if j.Attempts >= d.cfg.JobMaxAttempts {
		return release(JobFailed, j.DueAt, fmt.Sprintf("failed after %d attempts: %s", j.Attempts, j.LastError))
	}
	conv, err := d.cfg.Store.Conversation(ctx, j.ConversationID)
	if IsNotFound(err) {
		return release(JobCancelled, j.DueAt, "dropped: the conversation is gone")
	}
	if err != nil {
		return fmt.Errorf("loading conversation: %w", err)
	}
	if due := d.proactive.ProactiveDue(conv, LocationOf(conv, d.cfg.Location), now); due.After(now) {
		return release(JobPending, due, "deferred to the end of the user's quiet hours")
	}
	plan, err := d.cfg.Store.PlanJobRun(ctx, j, d.cfg.Owner, now, now.Add(jobBusyRetry))
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
		d.signal()
	}
	return nil
}
