package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
)

// buttons answers the buttons the core shows itself, without the
// model: a reminder's and a command's.
type buttons struct{ e *Engine }

// reminder answers a reminder's button, without the model: snoozing
// schedules the reminder's text again (once: its key is the reminder's)
// and says when; done marks it. One answer per reminder, as a question
// takes one: the second tap is told it was answered. A button of a job
// that is not this conversation's reminder changes nothing.
func (b buttons) reminder(ctx context.Context, log *slog.Logger, msg core.InboundMessage, jobID int64, action string) (core.TapAnswer, error) {
	e := b.e
	stale := core.TapAnswer{Notice: core.NoticeStaleButton}
	if e.cfg.Reminders == nil {
		return stale, nil
	}
	conv, err := e.cfg.Store.ConversationByThread(ctx, msg.Platform, msg.ChannelThreadID)
	if errors.Is(err, core.ErrNotFound) {
		return stale, nil
	}
	if err != nil {
		return core.TapAnswer{}, fmt.Errorf("finding the conversation of a reminder's button: %w", err)
	}
	j, err := e.cfg.Reminders.Job(ctx, jobID)
	if errors.Is(err, core.ErrNotFound) || err == nil && (j.ConversationID != conv.ID || j.Kind != core.JobMessage) {
		log.Info("a tap on a reminder's button that is not this conversation's", "job", jobID)
		return stale, nil
	}
	if err != nil {
		return core.TapAnswer{}, fmt.Errorf("reading the reminder of a button: %w", err)
	}
	now := e.cfg.Clock.Now().UTC()
	next := &core.Job{ConversationID: conv.ID, Kind: core.JobMessage, Status: core.JobPending, Text: j.Text, Name: j.Name,
		Format: j.Format, ImageURL: j.ImageURL, Origin: outbox.OriginSnooze, IdempotencyKey: "reminder-" + strconv.FormatInt(j.ID, 10),
		CreatedAt: now}
	label, notice := "", "Marked done."
	for _, c := range outbox.ReminderChoices(j.ID) {
		if c.Data == msg.Tap.Data {
			label = c.Label
		}
	}
	switch action {
	case outbox.ReminderSnooze10, outbox.ReminderSnooze60:
		minutes, _ := strconv.Atoi(action)
		next.DueAt = now.Add(time.Duration(minutes) * time.Minute)
		loc := core.LocationOf(conv, e.cfg.Location)
		if loc == nil {
			loc = time.UTC
		}
		notice = "Snoozed until " + next.DueAt.In(loc).Format("15:04") + "."
	default:
		// Kept as the reminder's answer, so that it takes no other.
		next.DueAt, next.Status, next.LastError = now, core.JobCancelled, "done: marked done by the user"
	}
	switch err := e.cfg.Reminders.CreateJob(ctx, next); {
	case errors.Is(err, core.ErrDuplicateJob):
		return core.TapAnswer{Notice: core.NoticeAlreadyAnswered}, nil
	case err != nil:
		return core.TapAnswer{}, fmt.Errorf("answering a reminder's button: %w", err)
	}
	if next.Status == core.JobPending && e.cfg.JobWake != nil {
		e.cfg.JobWake.Wake()
	}
	log.Info("a reminder's button answered", "job", jobID, "action", label, "next_job", next.ID)
	return core.TapAnswer{Chosen: label, Notice: notice}, nil
}
