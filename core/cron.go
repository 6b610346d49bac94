package core

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/parleybot/parley/core/prompts"
	"github.com/parleybot/parley/core/recurrence"
)

// Recurring jobs (JobAgentTurn) belong to one conversation and run as
// ordinary turns of it. At an occurrence the job loop queues a cron_turn
// run (one per occurrence: the store keys runs by job and occurrence) and
// moves the job on to its next occurrence. The run waits behind a running
// turn like any other and is never folded into it. When it starts, a
// readable trigger event joins the transcript, and the model gets that
// event with the job's execution prompt, rendered from a versioned
// template and kept in the run's record only. Whatever happens, the user
// sees something: the reply, "nothing to report", or a short failure note.

const (
	// cronOnTime is how late an occurrence may be looked at and still
	// count as on time; later ones were missed (the bot was down) and
	// follow the job's catch-up policy.
	cronOnTime = time.Minute
	// cronBusyRetry is when a due job whose conversation already has a
	// turn queued is looked at again, its occurrence kept.
	cronBusyRetry = 5 * time.Second
)

// CronTurn is what a turn knows of the recurring job occurrence it runs.
type CronTurn struct {
	Job        Job
	Occurrence time.Time
	// Late is true when the occurrence runs over a minute after its time.
	Late bool
	// Trigger is the event stored in the transcript.
	Trigger Message
	// Prompt is the rendered execution prompt the model gets with the
	// trigger; Template records it.
	Prompt   string
	Template TemplateRecord
}

// startCronTurn queues the turn of a due recurring job's occurrence, or
// skips missed occurrences, or waits for a queued turn to start first.
func (d *Dispatcher) startCronTurn(ctx context.Context, j Job, now time.Time) error {
	log := d.log.With("job", j.ID, "conversation", j.ConversationID)
	release := func(status JobStatus, note string) error {
		if _, err := d.cfg.Store.ReleaseJob(ctx, j.ID, d.cfg.Owner, status, j.DueAt, note); err != nil {
			return err
		}
		log.Warn("recurring job "+string(status), "note", note)
		return nil
	}
	sched, err := recurrence.Parse(j.Recurrence)
	if err != nil {
		return release(JobFailed, "its schedule does not parse: "+err.Error())
	}
	conv, err := d.cfg.Store.Conversation(ctx, j.ConversationID)
	if IsNotFound(err) {
		return release(JobCancelled, "dropped: the conversation is gone")
	}
	if err != nil {
		return fmt.Errorf("loading conversation: %w", err)
	}
	c, err := planOccurrence(sched, j, now, d.location(conv), d.cfg.LateGrace)
	if err != nil {
		return release(JobFailed, err.Error())
	}
	c.RetryAt = now.Add(cronBusyRetry)
	plan, err := d.cfg.Store.StartCronTurn(ctx, j, d.cfg.Owner, c)
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
		d.cfg.Metrics.Fired(JobAgentTurn, now.Sub(*c.Occurrence))
		log.Debug("cron turn queued", "run", plan.RunID, "occurrence", c.Occurrence, "next", c.Next)
		d.signal()
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
func planOccurrence(s *recurrence.Schedule, j Job, now time.Time, loc *time.Location, grace time.Duration) (CronStart, error) {
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
		return CronStart{}, fmt.Errorf("the schedule has no next occurrence: %w", err)
	}
	c := CronStart{Next: next, Now: now}
	// DueAt is later than the occurrence while the job waited for a
	// queued turn: that wait is not lateness.
	looked := latest
	if j.DueAt.After(looked) {
		looked = j.DueAt
	}
	onTime := now.Sub(looked) <= cronOnTime
	switch {
	case onTime:
		c.Occurrence = &latest
	case j.CatchUp != CatchUpNone && now.Sub(latest) <= grace:
		c.Occurrence = &latest
	}
	at := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04 MST") }
	switch {
	case c.Occurrence == nil && j.CatchUp == CatchUpNone:
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

// skipRun ends a run before it starts, as skipped, saying why.
type skipRun struct{ why string }

func (s skipRun) Error() string { return s.why }

// startCron begins the turn of a recurring job's occurrence: it stores the
// trigger event (a new session record after a quiet gap, as a user message
// would) and renders the execution prompt. A job cancelled since its run
// was queued ends the run as skipped, unless the user wrote meanwhile:
// their turn then goes on without the job.
func (d *Dispatcher) startCron(ctx context.Context, run *Run, job *Job, conv Conversation) (*CronTurn, Conversation, error) {
	if job.Kind != JobAgentTurn || (job.Status != JobPending && job.Status != JobSending) {
		if run.TriggerMessageID == nil {
			return nil, conv, skipRun{"skipped: the recurring job was " + string(job.Status) + " before its turn started"}
		}
		return nil, conv, nil
	}
	occ := run.RunAfter
	if run.OccurrenceAt != nil {
		occ = *run.OccurrenceAt
	}
	// Late is judged by when the run was queued: a user message that joined
	// the queued run moves its RunAfter, not its lateness.
	ct := &CronTurn{Job: *job, Occurrence: occ, Late: run.CreatedAt.Sub(occ) > cronOnTime}
	loc := d.location(conv)
	tpl := prompts.CronAgentTurn
	ct.Trigger = Message{
		ConversationID: conv.ID,
		Role:           RoleUser,
		Source:         SourceCronTurn,
		Content:        triggerText(ct, run.ID, tpl.Ref(), loc),
		RunID:          &run.ID,
		CreatedAt:      d.cfg.Clock.Now().UTC(),
		Metadata: map[string]any{
			"job_id": job.ID, "run_id": run.ID, "prompt_ref": tpl.Ref(),
			"occurrence_at": occ.UTC().Format(time.RFC3339),
		},
	}
	if ct.Late {
		ct.Trigger.Metadata["late"] = true
	}
	conv, err := d.cfg.Store.AppendTrigger(ctx, &ct.Trigger, d.limits.Gap)
	if err != nil {
		return nil, conv, fmt.Errorf("storing the trigger event: %w", err)
	}
	vars := map[string]string{
		"job_name":         job.Name,
		"job_id":           strconv.FormatInt(job.ID, 10),
		"schedule":         job.Recurrence,
		"time_zone":        loc.String(),
		"occurrence_local": occ.In(loc).Format("Monday 2 January 2006, 15:04"),
		"now_local":        d.cfg.Clock.Now().In(loc).Format("Monday 2 January 2006, 15:04"),
		"late":             "",
		"instruction":      job.Text,
	}
	if ct.Late {
		vars["late"] = "yes"
	}
	ct.Template = TemplateRecord{ID: tpl.ID(), Version: tpl.Version(), SHA256: tpl.SHA256(), Variables: vars}
	if ct.Prompt, err = tpl.Render(vars); err != nil {
		ct.Template.Errors = append(ct.Template.Errors, err.Error())
	}
	ct.Template.Rendered = ct.Prompt
	return ct, conv, nil
}

// triggerText is the trigger event as the transcript shows it.
func triggerText(ct *CronTurn, runID int64, ref string, loc *time.Location) string {
	s := fmt.Sprintf("Scheduled job triggered: %s\n(job %d, run %d, prompt %s", ct.Job.Name, ct.Job.ID, runID, ref)
	if ct.Late {
		s += ", late: it was due " + ct.Occurrence.In(loc).Format("Monday 2 January 15:04 MST")
	}
	return s + ")"
}

// withExecutionPrompt is the turn's history with the execution prompt
// joined to the trigger event, for this one request: one user message,
// which strict chat templates accept after any history.
func withExecutionPrompt(history []Message, ct *CronTurn) []Message {
	out := make([]Message, len(history), len(history)+1)
	copy(out, history)
	for i := range out {
		if out[i].ID == ct.Trigger.ID {
			out[i].Content += "\n\n" + ct.Prompt
			return out
		}
	}
	// The window always ends with the trigger; this keeps the prompt if
	// it ever does not.
	m := ct.Trigger
	m.Content += "\n\n" + ct.Prompt
	return append(out, m)
}

// cronNothingToReport is the closure of a cron turn that chose silence:
// the user sees that the job ran.
func (d *Dispatcher) cronNothingToReport(ctx context.Context, log *slog.Logger, t *Turn, a Adapter) *Message {
	msg := &Message{
		ConversationID:  t.Conversation.ID,
		Role:            RoleAssistant,
		Content:         fmt.Sprintf("Scheduled job %q: nothing to report this time.", t.Cron.Job.Name),
		Source:          SourceCronTurn,
		SessionRecordID: recordID(t),
		Metadata:        map[string]any{"status_notice": "nothing_to_report", "job_id": t.Cron.Job.ID},
	}
	if err := d.deliver(ctx, a, t, msg); err != nil {
		log.Error("sending a cron turn's status", "err", err)
	}
	return msg
}

// cronFailureNote is the closure of a cron turn that failed.
func (d *Dispatcher) cronFailureNote(t *Turn) string {
	s := fmt.Sprintf("Scheduled job %q could not run this time.", t.Cron.Job.Name)
	if next := t.Cron.Job.NextRunAt; next != nil {
		s += " It runs again " + next.In(t.Location).Format("Monday 2 January, 15:04") + "."
	}
	return s
}

// RecurringMover is what MoveRecurringJobs needs of the store.
type RecurringMover interface {
	ConversationJobs(ctx context.Context, conversationID int64, kind JobKind, statuses ...JobStatus) ([]Job, error)
	MoveRecurringJob(ctx context.Context, id int64, next time.Time) (bool, error)
}

// MoveRecurringJobs puts a conversation's pending recurring jobs in its
// new time zone loc: their next occurrence is read there from now on
// ("every day at 9" is 9 in the new zone). An interval is the same in
// every zone and stays. It reports whether any job moved.
func MoveRecurringJobs(ctx context.Context, st RecurringMover, conv int64, loc *time.Location, now time.Time) (bool, error) {
	jobs, err := st.ConversationJobs(ctx, conv, JobAgentTurn, JobPending)
	if err != nil {
		return false, err
	}
	moved := false
	for _, j := range jobs {
		sched, err := recurrence.Parse(j.Recurrence)
		if err != nil || sched.IsInterval() {
			continue
		}
		next, err := sched.Next(now, loc)
		if err != nil {
			continue
		}
		if _, err := st.MoveRecurringJob(ctx, j.ID, next); err != nil {
			return moved, fmt.Errorf("moving recurring job %d: %w", j.ID, err)
		}
		moved = true
	}
	return moved, nil
}
