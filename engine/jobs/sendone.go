package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
)

// sendOne sends one scheduled message and settles its job: sent (stored
// in the conversation), failed (permanent error, too many attempts, or
// missed: later than LateGrace after its time), or pending again after a
// backoff.
func (e *Engine) sendOne(ctx context.Context, j core.Job) {
	log := e.log.With("job", j.ID, "conversation", j.ConversationID)
	now := e.cfg.Clock.Now().UTC()
	settle := func(status core.JobStatus, due time.Time, note string) {
		if _, err := e.cfg.Store.ReleaseJob(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, status, due, note); err != nil {
			log.Error("settling a scheduled message", "err", err)
		}
	}
	conv, a, ok := e.sendable(ctx, log, j, now, settle)
	if !ok {
		return
	}
	choices := reminderChoices(j, a)
	// Spoken before a send slot is taken: the slot bounds sends in doubt,
	// not the speech service.
	voice := e.voiceNote(ctx, log, j, a)
	// The send must end while the lease holds, or another process (or
	// this one) may claim the job again and send it twice: a platform's
	// flood-control waits could otherwise outlast it.
	sendCtx, cancel := ctx, context.CancelFunc(func() {})
	if j.LeaseUntil != nil {
		// Relative to the Clock's now: a test's clock is not the wall's.
		sendCtx, cancel = context.WithTimeout(ctx, j.LeaseUntil.Sub(now)-e.leaseMargin()/2)
	}
	defer cancel()
	if !e.cfg.Outbox.DropsRepeats(a) {
		// Held until the job is settled: from the request until then, a
		// crash would send the message again (outbox/doubt.go). A slot not
		// free while the lease leaves time for a send hands the job back.
		slotCtx, cancelSlot := sendCtx, context.CancelFunc(func() {})
		if j.LeaseUntil != nil {
			slotCtx, cancelSlot = context.WithTimeout(sendCtx, j.LeaseUntil.Sub(now)-e.leaseMargin())
		}
		slot, err := e.cfg.Outbox.TakeSlot(slotCtx, a)
		cancelSlot()
		if err != nil {
			settle(core.JobPending, e.cfg.Clock.Now().UTC(), "no send slot free before its lease ran out: handed back")
			return
		}
		defer slot.Give()
		sendCtx = slot.In(sendCtx)
	}
	// Background: a paced platform lets waiting users' replies go first.
	out := core.OutboundMessage{
		ConversationID:  conv.ID,
		ChannelThreadID: conv.ChannelThreadID,
		ChannelUserID:   conv.ChannelUserID,
		Text:            j.Text,
		Format:          j.Format,
		ImageURL:        j.ImageURL,
		IdempotencyKey:  fmt.Sprintf("job-%d", j.ID),
		Choices:         choices,
		Files:           voice,
	}
	if len(voice) > 0 && len(choices) == 0 {
		out.Text = "" // the voice note says it; buttons need the text
	}
	res, sendErr := e.cfg.Outbox.Send(core.WithBackground(sendCtx), a, out)
	if sendErr != nil {
		e.cfg.Metrics.SendFailed(conv.Platform)
	}
	if sendErr != nil && len(res.PlatformMessageIDs) == 0 && ctx.Err() == nil && sendCtx.Err() != nil {
		// Not the platform's failure: the lease's time was up. Handed back
		// to be sent afresh, no attempt spent.
		log.Warn("a scheduled send outlasted its lease; handed back", "err", sendErr)
		settle(core.JobPending, e.cfg.Clock.Now().UTC(), "the send outlasted its lease: handed back")
		return
	}
	if sendErr != nil && len(res.PlatformMessageIDs) == 0 {
		e.sendFailed(ctx, log, j, now, sendErr)
		return
	}
	msg := sentMessage(j, conv, res, sendErr, now, e.cfg.Clock.Now().UTC(), choices)
	if len(voice) > 0 {
		msg.Metadata[core.VoiceReplyKey] = true
	}
	e.sent(ctx, log, j, conv, msg, now.Sub(j.DueAt))
}

// sendable finds where a claimed job goes, or settles it when it must not
// be sent now: its lease (nearly) over, missed after downtime, its
// conversation gone, its platform served elsewhere or down here.
func (e *Engine) sendable(ctx context.Context, log *slog.Logger, j core.Job, now time.Time, settle func(core.JobStatus, time.Time, string)) (core.Conversation, core.Adapter, bool) {
	if j.LeaseUntil != nil && now.After(j.LeaseUntil.Add(-e.leaseMargin())) {
		// Claimed in a batch that took too long to reach this job: its
		// lease is (nearly) over and another process may take it; sending
		// now could send it twice.
		settle(core.JobPending, now, "lease ran out before the send")
		return core.Conversation{}, nil, false
	}
	if late := now.Sub(j.DueAt); late > e.cfg.LateGrace {
		log.Warn("scheduled message missed: too late after downtime", "due", j.DueAt, "late_by", late)
		settle(core.JobFailed, j.DueAt, fmt.Sprintf("missed: due %s, %s past scheduler.late_grace", j.DueAt.Format(time.RFC3339), late.Round(time.Second)))
		return core.Conversation{}, nil, false
	}
	conv, err := e.sendConversation(ctx, j.ConversationID)
	if err != nil {
		if core.IsNotFound(err) {
			settle(core.JobCancelled, j.DueAt, "the conversation is gone")
		} else {
			settle(core.JobPending, now.Add(time.Minute), "loading the conversation: "+err.Error())
		}
		return core.Conversation{}, nil, false
	}
	a, ok := e.cfg.Outbox.Adapter(conv.Platform)
	if !ok {
		// Another process serves that platform; hand it back.
		settle(core.JobPending, now, "no adapter here for "+string(conv.Platform))
		return core.Conversation{}, nil, false
	}
	if h, ok := a.(core.HealthReporter); ok {
		if err := h.Health(); err != nil {
			// The platform is down here (a revoked token): wait for it
			// without spending an attempt; late_grace still bounds it.
			settle(core.JobPending, now.Add(time.Minute), "waiting for the platform: "+err.Error())
			return core.Conversation{}, nil, false
		}
	}
	return conv, a, true
}

// sendFailed settles a job whose send reached no one: failed for good on
// a permanent error or the last attempt, else pending after a backoff.
func (e *Engine) sendFailed(ctx context.Context, log *slog.Logger, j core.Job, now time.Time, sendErr error) {
	attempts := j.Attempts + 1
	switch {
	case core.IsPermanent(sendErr):
		log.Error("scheduled message cannot be delivered", "err", sendErr)
		e.noteAttempt(ctx, j, core.JobFailed, j.DueAt, sendErr.Error())
	case attempts >= e.cfg.JobMaxAttempts:
		log.Error("scheduled message failed; no attempts left", "attempts", attempts, "err", sendErr)
		e.noteAttempt(ctx, j, core.JobFailed, j.DueAt, sendErr.Error())
	default:
		wait := sendRetry().Delay(attempts - 1)
		log.Warn("scheduled message failed; trying again", "attempts", attempts, "retry_in", wait, "err", sendErr)
		e.noteAttempt(ctx, j, core.JobPending, now.Add(wait), sendErr.Error())
	}
}

// sentMessage is the conversation's record of a sent scheduled message:
// its source (scheduled, or routed by the API), how late it went, its
// format and image, the platform's ids, and what of it failed when only
// some parts went out.
func sentMessage(j core.Job, conv core.Conversation, res core.SendResult, sendErr error, now, at time.Time, choices []core.Choice) *core.Message {
	meta := map[string]any{"job_id": j.ID}
	if late := now.Sub(j.DueAt); late > time.Minute {
		meta["late_by_seconds"] = int64(late.Seconds())
	}
	source := core.SourceScheduledSend
	if core.RoutedOrigin(j.Origin) {
		// Routed by the owner's systems: the next turn sees who said it.
		source = core.SourceAPI
		meta["origin"] = j.Origin
	}
	if j.Format != core.FormatText {
		meta["format"] = string(j.Format)
	}
	if j.ImageURL != "" {
		meta["image_url"] = j.ImageURL
	}
	if cs := choices; len(cs) > 0 {
		labels, data := make([]string, len(cs)), make([]string, len(cs))
		for i, c := range cs {
			labels[i], data[i] = c.Label, c.Data
		}
		meta[core.ChoicesKey], meta[core.ChoiceDataKey] = labels, data
	}
	msg := &core.Message{
		ConversationID:  conv.ID,
		Role:            core.RoleAssistant,
		Content:         j.Text,
		Source:          source,
		SessionRecordID: nil, // the conversation's current record
		Metadata:        meta,
		CreatedAt:       at,
	}
	if len(res.PlatformMessageIDs) > 0 {
		msg.PlatformMessageID = res.PlatformMessageIDs[0]
		if len(res.PlatformMessageIDs) > 1 {
			meta["platform_message_ids"] = res.PlatformMessageIDs
		}
	}
	if sendErr != nil {
		// Some parts went out: it is sent, and the rest of the error kept.
		meta["undelivered"] = sendErr.Error()
	}
	return msg
}

// sent stores a sent scheduled message and marks its job sent; late is
// how late after its time it went.
func (e *Engine) sent(ctx context.Context, log *slog.Logger, j core.Job, conv core.Conversation, msg *core.Message, late time.Duration) {
	ok, err := e.cfg.Store.CompleteMessageJob(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, msg)
	switch {
	case err != nil:
		log.Error("recording a sent scheduled message", "err", err)
	case !ok:
		log.Warn("a scheduled message was sent after its lease ran out; another process may send it again")
	default:
		e.cfg.Outbox.Appended(conv, *msg)
		e.cfg.Metrics.Fired(core.JobMessage, e.cfg.Clock.Now().Sub(j.DueAt))
		log.Info("scheduled message sent", "late_by", late.Round(time.Millisecond))
	}
}

// noteAttempt counts a failed send and settles the job.
func (e *Engine) noteAttempt(ctx context.Context, j core.Job, status core.JobStatus, due time.Time, note string) {
	if _, err := e.cfg.Store.FailJobAttempt(context.WithoutCancel(ctx), j.ID, e.cfg.Owner, status, due, note); err != nil {
		e.log.Error("settling a scheduled message", "job", j.ID, "err", err)
	}
}

// reminderChoices are the buttons of a reminder: a one-off scheduled
// message the model set (or a reminder snoozed), never one routed by the
// owner's systems, on a platform that shows buttons (as numbered lines
// they would be text the user cannot tap). The core answers them without
// the model (intake).
func reminderChoices(j core.Job, a core.Adapter) []core.Choice {
	if !a.Capabilities().Choices || j.Kind != core.JobMessage || j.Recurrence != "" || (j.Origin != "tool" && j.Origin != outbox.OriginSnooze) {
		return nil
	}
	return outbox.ReminderChoices(j.ID)
}

// voiceNote is a scheduled message's voice note when voice.replies is
// always and the platform takes files: its text spoken (a message with a
// picture keeps its picture). None when it cannot be spoken: the text
// goes, and the log says why.
func (e *Engine) voiceNote(ctx context.Context, log *slog.Logger, j core.Job, a core.Adapter) []core.OutboundFile {
	v := e.cfg.Voice
	if v.Mode != "always" || v.Speaker == nil || j.ImageURL != "" || strings.TrimSpace(j.Text) == "" {
		return nil
	}
	if _, ok := a.(core.FileSender); !ok {
		return nil
	}
	note, ok := outbox.VoiceNote(ctx, log, v, j.Text, j.Format)
	if !ok {
		return nil
	}
	return []core.OutboundFile{note}
}
