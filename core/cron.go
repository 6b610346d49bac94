package core

import (
	"context"
	"fmt"
	"time"

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

// CronOnTime is how late an occurrence of a recurring job may be looked
// at and still count as on time; later ones were missed (the bot was
// down) and follow the job's catch-up policy.
const CronOnTime = time.Minute

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

// RoutedOrigin reports whether a job's origin is the API's (a message the
// bot owner's systems routed into the conversation).
func RoutedOrigin(origin string) bool {
	switch origin {
	case "api", "connector", "system":
		return true
	}
	return false
}
