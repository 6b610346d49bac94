// Package schedule lets the model promise a message for later and keep the
// promise: schedule_private_message stores the text it writes now, and at
// the due time the core sends exactly that text, with no second model
// call, through the conversation's adapter (see core/send.go).
// schedule_recurring_turn sets up a recurring job: at each occurrence the
// core runs a turn of the conversation with the job's instruction (see
// core/cron.go). The model can list and cancel what it scheduled, and
// record the user's time zone with set_timezone; every tool sees the
// turn's conversation only.
package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "schedule", New: func() core.Plugin { return New() }})
}

// Store is what the plugin needs; store implements it.
type Store interface {
	ScheduleMessage(ctx context.Context, j *core.Job, replace bool, max int) ([]int64, error)
	ConversationJobs(ctx context.Context, conversationID int64, kind core.JobKind, statuses ...core.JobStatus) ([]core.Job, error)
	CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error)
	SetTimeZone(ctx context.Context, conversationID int64, zone string) error
	CreateRecurringJob(ctx context.Context, j *core.Job, max int) error
	MoveRecurringJob(ctx context.Context, id int64, next time.Time) (bool, error)
}

// Limits on what the model may schedule.
const (
	// MaxTextRunes is the longest scheduled message.
	MaxTextRunes = 1024
	// MaxAhead is how far ahead a message may be scheduled.
	MaxAhead = 366 * 24 * time.Hour
)

// Plugin is the schedule plugin (plugins.schedule); it has no settings of
// its own: the cap on pending messages is scheduler.max_pending_per_conversation.
type Plugin struct {
	store      Store
	maxPending int
	// changed wakes the scheduler when a message is scheduled.
	changed func()
}

// Interface guards.
var (
	_ core.Plugin            = (*Plugin)(nil)
	_ core.Provisioner       = (*Plugin)(nil)
	_ core.ToolProvider      = (*Plugin)(nil)
	_ core.PromptContributor = (*Plugin)(nil)
	_ core.TurnNoter         = (*Plugin)(nil)
)

// New returns the plugin.
func New() *Plugin { return &Plugin{maxPending: 50} }

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "schedule" }

// Provision takes the store and the pending cap.
func (p *Plugin) Provision(_ context.Context, env core.Env) error {
	st, ok := env.Store.(Store)
	if !ok {
		return fmt.Errorf("schedule: the store (%T) cannot keep scheduled messages", env.Store)
	}
	p.store = st
	if env.MaxPendingPerConversation > 0 {
		p.maxPending = env.MaxPendingPerConversation
	}
	p.changed = env.JobsChanged
	if p.changed == nil {
		p.changed = func() {}
	}
	return nil
}

// PromptLayers explains the tools in L1.
func (p *Plugin) PromptLayers(context.Context, *core.Turn) ([]core.PromptLayer, error) {
	return []core.PromptLayer{{Level: core.LayerInstructions, Name: "schedule", Text: instructions}}, nil
}

const instructions = `## Promises for later
- When they ask you to remind them or to write at a certain time, call schedule_private_message with the time and the exact message you will send then, written now as you would say it then. It is sent as written, at that time.
- When they want something done again and again (a daily check-in, a weekly review), call schedule_recurring_turn: each time, you get a turn with its instruction and write to them afresh.
- Times are in their time zone unless you give an offset. If you do not know where they are and it matters, ask, and record it with set_timezone.
- list_scheduled_private_messages shows what you promised, recurring jobs too; cancel_scheduled_private_message takes one back. Only ever say you scheduled something after the tool said so.`

// TurnNote tells the model the user's current local time, every turn.
func (p *Plugin) TurnNote(_ context.Context, t *core.Turn) string {
	loc := t.Location
	if loc == nil {
		loc = time.UTC
	}
	return fmt.Sprintf("Now for them: %s (%s).", t.Now.In(loc).Format("Monday 2 January 2006, 15:04"), loc)
}
