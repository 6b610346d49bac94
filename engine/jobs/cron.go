package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"

	"github.com/parleybot/parley/core/recurrence"
)

// cronBusyRetry is when a due job whose conversation already has a turn
// queued is looked at again, its occurrence kept.
const cronBusyRetry = 5 * time.Second

// startCronTurn queues the turn of a due recurring job's occurrence, or
// skips missed occurrences, or waits for a queued turn to start first.
func (e *Engine) startCronTurn(ctx context.Context, j core.Job, now time.Time) error {
	log := e.log.With("job", j.ID, "conversation", j.ConversationID)
	release := func(status core.JobStatus, note string) error {
		if _, err := e.cfg.Store.ReleaseJob(ctx, j.ID, e.cfg.Owner, status, j.DueAt, note); err != nil {
			return err
		}
		log.Warn("recurring job "+string(status), "note", note)
		return nil
	}
	sched, err := recurrence.Parse(j.Recurrence)
	if err != nil {
		return release(core.JobFailed, "its schedule does not parse: "+err.Error())
	}
	conv, err := e.cfg.Store.Conversation(ctx, j.ConversationID)
	if core.IsNotFound(err) {
		return release(core.JobCancelled, "dropped: the conversation is gone")
	}
	if err != nil {
		return fmt.Errorf("loading conversation: %w", err)
	}
	c, err := planOccurrence(sched, j, now, core.LocationOf(conv, e.cfg.Location), e.cfg.LateGrace)
	if err != nil {
		return release(core.JobFailed, err.Error())
	}
	c.RetryAt = now.Add(cronBusyRetry)
	plan, err := e.cfg.Store.StartCronTurn(ctx, j, e.cfg.Owner, c)
	if err != nil {
		return err
	}
	switch {
	case plan.Lost:
		log.Info("recurring job was cancelled or taken over before its turn was planned")
	case plan.Busy:
		log.Debug("recurring job waits: the conversation has a turn queued")
	case plan.Duplicate:
		log.Info("the occurrence already has its turn", "occurrence", c.Occurrence)
	case plan.RunID != 0:
		e.cfg.Metrics.Fired(core.JobAgentTurn, now.Sub(*c.Occurrence))
		log.Debug("cron turn queued", "run", plan.RunID, "occurrence", c.Occurrence, "next", c.Next)
		e.signal()
	default:
		log.Info("recurring job skipped what it missed", "note", c.Note, "next", c.Next)
	}
	return nil
}

// planOccurrence decides which occurrence of a due recurring job runs now:
// the latest one that has come, if the scheduler looks at it on time;
// otherwise (the bot was down) under catch_up latest that one, once and
// late, if it is within grace, and under none no occurrence. The job's
// next occurrence is the first after now.
func planOccurrence(s *recurrence.Schedule, j core.Job, now time.Time, loc *time.Location, grace time.Duration) (core.CronStart, error) {
	first := j.DueAt
	if j.NextRunAt != nil {
		first = *j.NextRunAt
	}
	latest := s.Latest(first, now, loc)
	next, err := s.Next(latest, loc)
	for err == nil && !next.After(now) {
		next, err = s.Next(next, loc)
	}
	if err != nil {
		return core.CronStart{}, fmt.Errorf("the schedule has no next occurrence: %w", err)
	}
	c := core.CronStart{Next: next, Now: now}
	// DueAt is later than the occurrence while the job waited for a
	// queued turn: that wait is not lateness.
	looked := latest
	if j.DueAt.After(looked) {
		looked = j.DueAt
	}
	onTime := now.Sub(looked) <= core.CronOnTime
	switch {
	case onTime:
		c.Occurrence = &latest
	case j.CatchUp != core.CatchUpNone && now.Sub(latest) <= grace:
		c.Occurrence = &latest
	}
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04 MST") }
	switch {
	case c.Occurrence == nil && j.CatchUp == core.CatchUpNone:
		c.Note = fmt.Sprintf("skipped the occurrences from %s to %s, missed while the bot was down (catch_up: none)", at(first), at(latest))
	case c.Occurrence == nil:
		c.Note = fmt.Sprintf("skipped the occurrences from %s to %s, missed while the bot was down and older than late_grace (%s)",
			at(first), at(latest), grace)
	case latest.After(first) && onTime:
		c.Note = fmt.Sprintf("missed the occurrences from %s while the bot was down; ran the latest, %s, on time", at(first), at(latest))
	case latest.After(first):
		c.Note = fmt.Sprintf("missed the occurrences from %s while the bot was down; ran the latest, %s, late", at(first), at(latest))
	}
	return c, nil
}
