package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
	"github.com/parleybot/parley/core/recurrence"
)

// Limits on recurring turns.
const (
	// MaxRecurring is how many recurring jobs one conversation may have.
	MaxRecurring = 10
	// MaxNameRunes is the longest job name.
	MaxNameRunes = 80
	// MinRecurringGap is the shortest time between two occurrences: every
	// occurrence is a model call.
	MinRecurringGap = 5 * time.Minute
)

var recurringTool = llm.Tool{
	Name: "schedule_recurring_turn",
	Description: `Set up a recurring job for this person: on each occurrence you get a turn of this conversation with the instruction, and what you write is sent to them. ` +
		`schedule: a 5-field cron expression ("0 9 * * 1-5": weekdays at 09:00) or an interval ("every 2h"), in their time zone. ` +
		`instruction: what to do each time, written to yourself ("ask how the training went and cheer them on"). name: a short name they will see ("daily check-in"). ` +
		`catch_up: if the bot was down at an occurrence, "latest" (default) runs the most recent missed one once, late; "none" skips missed ones.`,
	Parameters: json.RawMessage(`{"type":"object","properties":{
		"schedule":{"type":"string"},
		"instruction":{"type":"string","maxLength":1024},
		"name":{"type":"string","maxLength":80},
		"catch_up":{"type":"string","enum":["latest","none"],"default":"latest"}},
		"required":["schedule","instruction","name"],"additionalProperties":false}`),
}

type recurringCreated struct {
	TaskID       int64  `json:"task_id"`
	Name         string `json:"name"`
	Schedule     string `json:"schedule"`
	TimeZone     string `json:"time_zone"`
	NextRunLocal string `json:"next_run_local"`
	NextRunUTC   string `json:"next_run_utc"`
	CatchUp      string `json:"catch_up"`
	Instruction  string `json:"instruction"`
}

func (p *Plugin) scheduleRecurring(ctx context.Context, conv int64, loc *time.Location, now time.Time, raw json.RawMessage) (string, error) {
	const tool = "schedule_recurring_turn"
	var a struct {
		Schedule    string `json:"schedule"`
		Instruction string `json:"instruction"`
		Name        string `json:"name"`
		CatchUp     string `json:"catch_up"`
	}
	if err := decode(tool, raw, &a); err != nil {
		return "", err
	}
	sched, err := recurrence.Parse(a.Schedule)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	first, err := sched.Next(now, loc)
	if err != nil {
		return "", fmt.Errorf("%s: schedule %q: %w", tool, a.Schedule, err)
	}
	if second, err := sched.Next(first, loc); err == nil && second.Sub(first) < MinRecurringGap {
		return "", fmt.Errorf("%s: schedule %q runs every %s; occurrences must be at least %s apart", tool, a.Schedule,
			second.Sub(first), MinRecurringGap)
	}
	// Both reach the user or a later prompt: no control token, no
	// reasoning.
	instruction, name := modeltext.Clean(a.Instruction), strings.Join(strings.Fields(modeltext.Clean(a.Name)), " ")
	catchUp := core.CatchUp(a.CatchUp)
	switch {
	case instruction == "":
		return "", fmt.Errorf("%s: instruction is empty", tool)
	case utf8.RuneCountInString(instruction) > MaxTextRunes:
		return "", fmt.Errorf("%s: instruction has %d characters, at most %d", tool, utf8.RuneCountInString(instruction), MaxTextRunes)
	case name == "":
		return "", fmt.Errorf("%s: name is empty", tool)
	case utf8.RuneCountInString(name) > MaxNameRunes:
		return "", fmt.Errorf("%s: name has %d characters, at most %d", tool, utf8.RuneCountInString(name), MaxNameRunes)
	case catchUp == "":
		catchUp = core.CatchUpLatest
	case catchUp != core.CatchUpLatest && catchUp != core.CatchUpNone:
		return "", fmt.Errorf(`%s: catch_up %q: want "latest" or "none"`, tool, a.CatchUp)
	}
	job := &core.Job{ConversationID: conv, Text: instruction, Name: name, DueAt: first.UTC(), Recurrence: sched.String(),
		CatchUp: catchUp, Origin: "tool", CreatedByToolCallID: llm.ToolCallID(ctx), CreatedAt: now}
	err = p.store.CreateRecurringJob(ctx, job, MaxRecurring)
	if errors.Is(err, core.ErrTooManyRecurring) {
		return "", fmt.Errorf("%s: this person already has %d recurring jobs, the most allowed; cancel one first", tool, MaxRecurring)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", tool, err)
	}
	p.changed()
	out, err := json.Marshal(recurringCreated{TaskID: job.ID, Name: name, Schedule: sched.String(), TimeZone: loc.String(),
		NextRunLocal: first.In(loc).Format("Monday 2006-01-02 15:04 MST"), NextRunUTC: first.UTC().Format(time.RFC3339),
		CatchUp: string(catchUp), Instruction: instruction})
	return string(out), err
}

// recurringItem is a recurring job as list_scheduled_private_messages shows it.
type recurringItem struct {
	TaskID       int64  `json:"task_id"`
	Name         string `json:"name"`
	Schedule     string `json:"schedule"`
	NextRunLocal string `json:"next_run_local"`
	Instruction  string `json:"instruction"`
	CatchUp      string `json:"catch_up"`
}

func (p *Plugin) listRecurring(ctx context.Context, conv int64, loc *time.Location) ([]recurringItem, error) {
	jobs, err := p.store.ConversationJobs(ctx, conv, core.JobAgentTurn, core.JobPending, core.JobSending)
	if err != nil {
		return nil, err
	}
	items := make([]recurringItem, len(jobs))
	for i, j := range jobs {
		next := j.DueAt
		if j.NextRunAt != nil {
			next = *j.NextRunAt
		}
		items[i] = recurringItem{TaskID: j.ID, Name: j.Name, Schedule: j.Recurrence,
			NextRunLocal: next.In(loc).Format("Monday 2006-01-02 15:04 MST"), Instruction: j.Text, CatchUp: string(j.CatchUp)}
	}
	return items, nil
}

// moveRecurring puts a conversation's recurring jobs in its new time zone:
// their next occurrence is read there from now on.
func (p *Plugin) moveRecurring(ctx context.Context, conv int64, loc *time.Location, now time.Time) error {
	_, err := core.MoveRecurringJobs(ctx, p.store, conv, loc, now)
	p.changed()
	return err
}
