package turns

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/parleybot/parley/core"

	"github.com/parleybot/parley/core/prompts"
)

// skipRun ends a run before it starts, as skipped, saying why.
type skipRun struct{ why string }

func (s skipRun) Error() string { return s.why }

// startCron begins the turn of a recurring job's occurrence: it stores the
// trigger event (a new session record after a quiet gap, as a user message
// would) and renders the execution prompt. A job cancelled since its run
// was queued ends the run as skipped, unless the user wrote meanwhile:
// their turn then goes on without the job.
func (s *speaker) startCron(ctx context.Context, run *core.Run, job *core.Job, conv core.Conversation) (*core.CronTurn, core.Conversation, error) {
	if job.Kind != core.JobAgentTurn || (job.Status != core.JobPending && job.Status != core.JobSending) {
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
	ct := &core.CronTurn{Job: *job, Occurrence: occ, Late: run.CreatedAt.Sub(occ) > core.CronOnTime}
	loc := core.LocationOf(conv, s.cfg.Location)
	tpl := prompts.CronAgentTurn
	ct.Trigger = core.Message{
		ConversationID: conv.ID,
		Role:           core.RoleUser,
		Source:         core.SourceCronTurn,
		Content:        triggerText(ct, run.ID, tpl.Ref(), loc),
		RunID:          &run.ID,
		CreatedAt:      s.cfg.Clock.Now().UTC(),
		Metadata: map[string]any{
			"job_id": job.ID, "run_id": run.ID, "prompt_ref": tpl.Ref(),
			"occurrence_at": occ.UTC().Format(time.RFC3339),
		},
	}
	if ct.Late {
		ct.Trigger.Metadata["late"] = true
	}
	conv, err := s.cfg.Store.AppendTrigger(ctx, &ct.Trigger, s.cfg.Session.Gap)
	if err != nil {
		return nil, conv, fmt.Errorf("storing the trigger event: %w", err)
	}
	vars := map[string]string{
		"job_name":         job.Name,
		"job_id":           strconv.FormatInt(job.ID, 10),
		"schedule":         job.Recurrence,
		"time_zone":        loc.String(),
		"occurrence_local": occ.In(loc).Format("Monday 2 January 2006, 15:04"),
		"now_local":        s.cfg.Clock.Now().In(loc).Format("Monday 2 January 2006, 15:04"),
		"late":             "",
		"instruction":      job.Text,
	}
	if ct.Late {
		vars["late"] = "yes"
	}
	ct.Template = core.TemplateRecord{ID: tpl.ID(), Version: tpl.Version(), SHA256: tpl.SHA256(), Variables: vars}
	if ct.Prompt, err = tpl.Render(vars); err != nil {
		ct.Template.Errors = append(ct.Template.Errors, err.Error())
	}
	ct.Template.Rendered = ct.Prompt
	return ct, conv, nil
}

// triggerText is the trigger event as the transcript shows it.
func triggerText(ct *core.CronTurn, runID int64, ref string, loc *time.Location) string {
	s := fmt.Sprintf("Scheduled job triggered: %s\n(job %d, run %d, prompt %s", ct.Job.Name, ct.Job.ID, runID, ref)
	if ct.Late {
		s += ", late: it was due " + ct.Occurrence.In(loc).Format("Monday 2 January 15:04 MST")
	}
	return s + ")"
}

// withExecutionPrompt is the turn's history with the execution prompt
// joined to the trigger event, for this one request: one user message,
// which strict chat templates accept after any history.
func withExecutionPrompt(history []core.Message, ct *core.CronTurn) []core.Message {
	out := make([]core.Message, len(history), len(history)+1)
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
func (s *speaker) cronNothingToReport(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) *core.Message {
	msg := &core.Message{
		ConversationID:  t.Conversation.ID,
		Role:            core.RoleAssistant,
		Content:         fmt.Sprintf("Scheduled job %q: nothing to report this time.", t.Cron.Job.Name),
		Source:          core.SourceCronTurn,
		SessionRecordID: recordID(t),
		Metadata:        map[string]any{"status_notice": "nothing_to_report", "job_id": t.Cron.Job.ID},
	}
	if err := s.courier.deliver(ctx, a, t, msg); err != nil {
		log.Error("sending a cron turn's status", "err", err)
	}
	return msg
}

// cronFailureNote is the closure of a cron turn that failed.
func cronFailureNote(t *core.Turn) string {
	s := fmt.Sprintf("Scheduled job %q could not run this time.", t.Cron.Job.Name)
	if next := t.Cron.Job.NextRunAt; next != nil {
		s += " It runs again " + next.In(t.Location).Format("Monday 2 January, 15:04") + "."
	}
	return s
}
