package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
	"github.com/parleybot/parley/core/recurrence"
)

// Tools offers the scheduling tools, bound to the turn's conversation.
func (p *Plugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	conv, now := t.Conversation.ID, t.Now
	loc := t.Location
	if loc == nil {
		loc = time.UTC
	}
	// set_timezone moves the zone the other tools read for the rest of
	// the turn too ("I'm in Tokyo, remind me at 9").
	z := &zone{loc: loc}
	return []llm.Tool{
		{
			Name:        "schedule_private_message",
			Description: `Schedule a message to send to this person later, exactly as written. send_at: RFC 3339 with an offset ("2026-11-24T09:00:00+01:00") or "YYYY-MM-DD HH:MM" in their time zone. replace_existing cancels the messages already scheduled first.`,
			Parameters: json.RawMessage(`{"type":"object","properties":{
				"send_at":{"type":"string"},
				"message_text":{"type":"string","maxLength":1024},
				"replace_existing":{"type":"boolean","default":false}},
				"required":["send_at","message_text"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.schedule(ctx, conv, z.get(), now, raw)
			},
		},
		{
			Name:        recurringTool.Name,
			Description: recurringTool.Description,
			Parameters:  recurringTool.Parameters,
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.scheduleRecurring(ctx, conv, z.get(), now, raw)
			},
		},
		{
			Name:        "list_scheduled_private_messages",
			Description: "List the messages scheduled for this person that are not sent yet, and their recurring jobs.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.list(ctx, conv, z.get(), raw)
			},
		},
		{
			Name:        "cancel_scheduled_private_message",
			Description: "Cancel one scheduled message or recurring job by its task_id.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"integer"}},"required":["task_id"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.cancel(ctx, conv, raw)
			},
		},
		{
			Name:        "set_timezone",
			Description: `Record this person's time zone, an IANA name like "Europe/Berlin" or "Asia/Tokyo", when they tell you where they are.`,
			Parameters:  json.RawMessage(`{"type":"object","properties":{"iana_name":{"type":"string"}},"required":["iana_name"],"additionalProperties":false}`),
			Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
				return p.setTimeZone(ctx, conv, now, z, raw)
			},
		},
	}, nil
}

func decode(tool string, raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: bad arguments: %v", tool, err)
	}
	return nil
}

// ParseSendAt reads send_at: RFC 3339 with an offset, or "YYYY-MM-DD
// HH:MM" (seconds allowed) in loc. A local time the clocks skip is the
// moment right after the jump; a repeated one is its first occurrence.
func ParseSendAt(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		// Read the wall clock, then place it in loc with the DST rules.
		w, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		return recurrence.WallTime(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), loc), nil
	}
	return time.Time{}, fmt.Errorf(`send_at %q is not a time: use RFC 3339 with an offset ("2026-11-24T09:00:00+01:00") or "YYYY-MM-DD HH:MM" in their time zone`, s)
}

type scheduled struct {
	TaskID          int64   `json:"task_id"`
	ConversationID  int64   `json:"conversation_id"`
	SendAtLocal     string  `json:"send_at_local"`
	SendAtUTC       string  `json:"send_at_utc"`
	TimeZone        string  `json:"time_zone"`
	MessageText     string  `json:"message_text"`
	ReplaceExisting bool    `json:"replace_existing"`
	Cancelled       []int64 `json:"cancelled_task_ids"`
}

func (p *Plugin) schedule(ctx context.Context, conv int64, loc *time.Location, now time.Time, raw json.RawMessage) (string, error) {
	var a struct {
		SendAt          string `json:"send_at"`
		MessageText     string `json:"message_text"`
		ReplaceExisting bool   `json:"replace_existing"`
	}
	if err := decode("schedule_private_message", raw, &a); err != nil {
		return "", err
	}
	at, err := ParseSendAt(a.SendAt, loc)
	if err != nil {
		return "", fmt.Errorf("schedule_private_message: %w", err)
	}
	// Sent verbatim later, so nothing the model must not show may stay
	// in it: a control token, its reasoning.
	text := modeltext.Clean(a.MessageText)
	switch {
	case !at.After(now):
		return "", fmt.Errorf("schedule_private_message: send_at %s is in the past (it is now %s)",
			at.In(loc).Format("2006-01-02 15:04 MST"), now.In(loc).Format("2006-01-02 15:04 MST"))
	case at.Sub(now) > MaxAhead:
		return "", fmt.Errorf("schedule_private_message: send_at %s is more than a year ahead", at.In(loc).Format("2006-01-02"))
	case text == "" && strings.TrimSpace(a.MessageText) != "":
		return "", errors.New("schedule_private_message: message_text holds only control tokens or reasoning, which are never sent; write the message itself")
	case text == "":
		return "", errors.New("schedule_private_message: message_text is empty")
	case utf8.RuneCountInString(text) > MaxTextRunes:
		return "", fmt.Errorf("schedule_private_message: message_text has %d characters, at most %d", utf8.RuneCountInString(text), MaxTextRunes)
	}
	job := &core.Job{ConversationID: conv, Text: text, Name: "scheduled message", DueAt: at.UTC(), Origin: "tool",
		Format:              core.FormatRichText, // the model writes Markdown
		CreatedByToolCallID: llm.ToolCallID(ctx), CreatedAt: now}
	cancelled, err := p.store.ScheduleMessage(ctx, job, a.ReplaceExisting, p.maxPending)
	if errors.Is(err, core.ErrTooManyPending) {
		return "", fmt.Errorf("schedule_private_message: this person already has %d messages scheduled, the most allowed; cancel one first or use replace_existing", p.maxPending)
	}
	if err != nil {
		return "", fmt.Errorf("schedule_private_message: %w", err)
	}
	p.changed()
	if cancelled == nil {
		cancelled = []int64{}
	}
	out, err := json.Marshal(scheduled{TaskID: job.ID, ConversationID: conv, SendAtLocal: at.In(loc).Format("2006-01-02 15:04 MST"),
		SendAtUTC: at.UTC().Format(time.RFC3339), TimeZone: loc.String(), MessageText: text,
		ReplaceExisting: a.ReplaceExisting, Cancelled: cancelled})
	return string(out), err
}

func (p *Plugin) list(ctx context.Context, conv int64, loc *time.Location, raw json.RawMessage) (string, error) {
	if err := decode("list_scheduled_private_messages", raw, &struct{}{}); err != nil {
		return "", err
	}
	jobs, err := p.store.ConversationJobs(ctx, conv, core.JobMessage, core.JobPending, core.JobSending)
	if err != nil {
		return "", fmt.Errorf("list_scheduled_private_messages: %w", err)
	}
	type item struct {
		TaskID      int64  `json:"task_id"`
		SendAtLocal string `json:"send_at_local"`
		MessageText string `json:"message_text"`
		Status      string `json:"status"`
	}
	items := make([]item, len(jobs))
	for i, j := range jobs {
		items[i] = item{TaskID: j.ID, SendAtLocal: j.DueAt.In(loc).Format("2006-01-02 15:04 MST"), MessageText: j.Text, Status: string(j.Status)}
	}
	recurring, err := p.listRecurring(ctx, conv, loc)
	if err != nil {
		return "", fmt.Errorf("list_scheduled_private_messages: %w", err)
	}
	out, err := json.Marshal(map[string]any{"scheduled": items, "recurring": recurring})
	return string(out), err
}

func (p *Plugin) cancel(ctx context.Context, conv int64, raw json.RawMessage) (string, error) {
	var a struct {
		TaskID *int64 `json:"task_id"`
	}
	if err := decode("cancel_scheduled_private_message", raw, &a); err != nil {
		return "", err
	}
	if a.TaskID == nil {
		return "", errors.New("cancel_scheduled_private_message: task_id is required")
	}
	j, err := p.store.CancelJob(ctx, conv, *a.TaskID, llm.ToolCallID(ctx))
	switch {
	case errors.Is(err, core.ErrNotPending):
		return "", fmt.Errorf("cancel_scheduled_private_message: task %d is already %s", *a.TaskID, j.Status)
	case core.IsNotFound(err):
		return "", fmt.Errorf("cancel_scheduled_private_message: there is no task %d for this person (list_scheduled_private_messages shows them)", *a.TaskID)
	case err != nil:
		return "", fmt.Errorf("cancel_scheduled_private_message: %w", err)
	}
	if j.Kind == core.JobAgentTurn {
		out, err := json.Marshal(map[string]any{"cancelled": j.ID, "recurring_job": j.Name})
		return string(out), err
	}
	out, err := json.Marshal(map[string]any{"cancelled": j.ID, "message_text": j.Text})
	return string(out), err
}

func (p *Plugin) setTimeZone(ctx context.Context, conv int64, now time.Time, z *zone, raw json.RawMessage) (string, error) {
	var a struct {
		IANAName string `json:"iana_name"`
	}
	if err := decode("set_timezone", raw, &a); err != nil {
		return "", err
	}
	name := strings.TrimSpace(a.IANAName)
	loc, err := time.LoadLocation(name)
	// A system's zoneinfo directory also opens "Europe//Paris" and
	// "./UTC", which are no zone's name: the embedded database (and another
	// replica's system) would not know them.
	odd := slices.ContainsFunc(strings.Split(name, "/"), func(s string) bool { return s == "" || s == "." })
	if err != nil || name == "" || name == "Local" || odd {
		return "", fmt.Errorf(`set_timezone: %q is not an IANA time zone name (like "Europe/Berlin" or "America/New_York")`, name)
	}
	if err := p.store.SetTimeZone(ctx, conv, loc.String()); err != nil {
		return "", fmt.Errorf("set_timezone: %w", err)
	}
	z.set(loc)
	if err := p.moveRecurring(ctx, conv, loc, now); err != nil {
		return "", fmt.Errorf("set_timezone: moving the recurring jobs to %s: %w", loc, err)
	}
	out, err := json.Marshal(map[string]any{"time_zone": loc.String(), "local_time": now.In(loc).Format("Monday 2 January 2006, 15:04")})
	return string(out), err
}

// zone is the user's time zone during one turn's tool calls.
type zone struct {
	mu  sync.Mutex
	loc *time.Location
}

func (z *zone) get() *time.Location {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.loc
}

func (z *zone) set(loc *time.Location) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.loc = loc
}
