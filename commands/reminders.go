package commands

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

const (
	// listingKey is the metadata of a /reminders answer that keeps the
	// ids of the jobs it listed, in the order shown.
	listingKey = "reminders"
	// listingLookback is how many recent messages /cancel searches for
	// the newest listing: one further back is too old to go by.
	listingLookback = 100
	// textPreview bounds a reminder's text in a listing.
	textPreview = 200
	// cancelledBy marks a job the user cancelled by command.
	cancelledBy = "command:/cancel"
)

// reminders lists the conversation's pending scheduled messages and its
// recurring jobs, numbered 1..N in the user's zone, and keeps their ids
// on the answer for /cancel N.
func (h *Handler) reminders(ctx context.Context, conv core.Conversation, _ string) (core.CommandReply, error) {
	msgs, err := h.cfg.Store.ConversationJobs(ctx, conv.ID, core.JobMessage, core.JobPending)
	if err != nil {
		return core.CommandReply{}, err
	}
	recurring, err := h.cfg.Store.ConversationJobs(ctx, conv.ID, core.JobAgentTurn, core.JobPending, core.JobSending)
	if err != nil {
		return core.CommandReply{}, err
	}
	ids := make([]int64, 0, len(msgs)+len(recurring))
	if len(msgs)+len(recurring) == 0 {
		return core.CommandReply{
			Text:     "You have no reminders and no recurring messages. Ask me to remind you of something and it will show up here.",
			Metadata: map[string]any{listingKey: ids},
		}, nil
	}
	loc := h.location(conv)
	var b strings.Builder
	fmt.Fprintf(&b, "**Your reminders** (times in %s):\n\n", escape(loc.String(), 64))
	for _, j := range msgs {
		ids = append(ids, j.ID)
		fmt.Fprintf(&b, "%d. %s: %s\n", len(ids), when(j.DueAt, loc), inline(j.Text, textPreview))
	}
	for _, j := range recurring {
		ids = append(ids, j.ID)
		fmt.Fprintf(&b, "%d. %s\n", len(ids), describeRecurring(j, loc))
	}
	b.WriteString("\nSend /cancel and a number to cancel one.")
	return core.CommandReply{Text: b.String(), Metadata: map[string]any{listingKey: ids}, Choices: cancelButtons(ids)}, nil
}

// describeRecurring writes a recurring job as a listing shows it: its
// name, its schedule as written (in code, which needs no escaping) and
// its next occurrence in loc.
func describeRecurring(j core.Job, loc *time.Location) string {
	next := j.DueAt
	if j.NextRunAt != nil {
		next = *j.NextRunAt
	}
	return fmt.Sprintf("Recurring: %s (`%s`), next %s", escape(j.Name, 80), strings.ReplaceAll(j.Recurrence, "`", "'"),
		when(next, loc))
}

// cancel cancels the N-th job of the newest /reminders listing.
func (h *Handler) cancel(ctx context.Context, conv core.Conversation, args string) (core.CommandReply, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(args, "#"))
	if err != nil || n < 1 {
		what := "Which one?"
		if args != "" {
			what = fmt.Sprintf("“%s” is not a number.", escape(args, 40))
		}
		return reply("%s Send /reminders to see the list, then /cancel and its number, like `/cancel 1`.", what)
	}
	ids, found, err := h.lastListing(ctx, conv)
	if err != nil {
		return core.CommandReply{}, err
	}
	switch {
	case !found:
		return reply("Send /reminders first to see what's scheduled, then /cancel and its number.")
	case len(ids) == 0:
		return reply("The last list was empty: there is nothing to cancel. Send /reminders to look again.")
	case n > len(ids):
		return reply("There is no number %d on your last list (it had %d). Send /reminders to see it again.", n, len(ids))
	}
	j, err := h.cfg.Store.CancelJob(ctx, conv.ID, ids[n-1], cancelledBy)
	switch {
	case errors.Is(err, core.ErrNotPending):
		return reply("Number %d can't be cancelled any more: %s.", n, notPending(j.Status))
	case core.IsNotFound(err):
		return reply("Number %d is gone. Send /reminders to see what's left.", n)
	case err != nil:
		return core.CommandReply{}, err
	}
	h.cfg.JobsChanged()
	loc := h.location(conv)
	if j.Kind == core.JobAgentTurn {
		return reply("Cancelled number %d, the recurring “%s”. It won't run again.", n, escape(j.Name, 80))
	}
	return reply("Cancelled number %d: “%s”, which was due %s.", n, inline(j.Text, textPreview), when(j.DueAt, loc))
}

// lastListing returns the job ids of the newest /reminders answer of the
// conversation; found is false when there is none recent enough.
func (h *Handler) lastListing(ctx context.Context, conv core.Conversation) (ids []int64, found bool, err error) {
	msgs, err := h.cfg.Store.RecentMessages(ctx, conv.ID, listingLookback)
	if err != nil {
		return nil, false, err
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != core.RoleAssistant || m.Source != core.SourceCommand {
			continue
		}
		if raw, ok := m.Metadata[listingKey]; ok {
			return jobIDs(raw), true, nil
		}
	}
	return nil, false, nil
}

// jobIDs reads a listing's ids: []int64 as written, or the []any of
// float64 that the stored JSON comes back as.
func jobIDs(raw any) []int64 {
	switch v := raw.(type) {
	case []int64:
		return v
	case []any:
		out := make([]int64, 0, len(v))
		for _, x := range v {
			if f, ok := x.(float64); ok {
				out = append(out, int64(f))
			}
		}
		return out
	}
	return nil
}

// notPending says why a job can no longer be cancelled.
func notPending(s core.JobStatus) string {
	switch s {
	case core.JobSent:
		return "it was already sent"
	case core.JobSending:
		return "it is being sent right now"
	case core.JobCancelled:
		return "it was already cancelled"
	case core.JobFailed:
		return "it could not be sent"
	}
	return "it is " + string(s)
}
