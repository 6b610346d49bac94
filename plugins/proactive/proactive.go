// Package proactive lets the bot write first. A reply may end with
// <PROACTIVE>{"delay_seconds":N,"reason":"..."} (read by the control_tokens
// plugin); the core keeps it as a follow-up job. At its due time the
// follow-up is dropped if the user wrote meanwhile or a new session began;
// otherwise the model gets one more turn, with the reason as a hidden note,
// and may still answer <SILENCE>. This plugin says when a follow-up may run
// (not inside the user's quiet hours) and writes that note.
package proactive

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "proactive", New: func() core.Plugin { return New() }})
}

// QuietHours is a daily window, in each user's own time zone, in which
// the bot does not write first. Start and End are "HH:MM"; a window may
// wrap midnight ("23:00" to "08:00"). Both empty: no quiet hours.
type QuietHours struct {
	Start string `yaml:"start"`
	End   string `yaml:"end"`

	start, end int // minutes after midnight
}

// Plugin is the proactive plugin; its exported fields are its config
// (plugins.proactive).
type Plugin struct {
	// QuietHours is when a follow-up due then waits until the window ends
	// (default: none).
	QuietHours QuietHours `yaml:"quiet_hours"`

	clock core.Clock
}

// Interface guards.
var (
	_ core.Plugin            = (*Plugin)(nil)
	_ core.Provisioner       = (*Plugin)(nil)
	_ core.Validator         = (*Plugin)(nil)
	_ core.PromptContributor = (*Plugin)(nil)
	_ core.ProactivePolicy   = (*Plugin)(nil)
)

// New returns the plugin with its defaults.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "proactive" }

// Provision takes the clock.
func (p *Plugin) Provision(_ context.Context, env core.Env) error {
	p.clock = env.Clock
	if p.clock == nil {
		p.clock = core.SystemClock{}
	}
	return nil
}

// Validate reads the quiet hours.
func (p *Plugin) Validate() error {
	q := &p.QuietHours
	if q.Start == "" && q.End == "" {
		return nil
	}
	var err error
	if q.start, err = clockTime(q.Start); err != nil {
		return fmt.Errorf("proactive: quiet_hours.start: %w", err)
	}
	if q.end, err = clockTime(q.End); err != nil {
		return fmt.Errorf("proactive: quiet_hours.end: %w", err)
	}
	if q.start == q.end {
		return fmt.Errorf("proactive: quiet_hours.start and end are both %s: give a window, or leave both empty", q.Start)
	}
	return nil
}

// clockTime reads "HH:MM" as minutes after midnight.
func clockTime(s string) (int, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("want HH:MM (24-hour), got %q", s)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// ProactiveDue returns due, or the end of the user's quiet hours when due
// falls inside them.
func (p *Plugin) ProactiveDue(_ core.Conversation, loc *time.Location, due time.Time) time.Time {
	q := p.QuietHours
	if q.Start == "" && q.End == "" {
		return due
	}
	if loc == nil {
		loc = time.UTC
	}
	local := due.In(loc)
	m := local.Hour()*60 + local.Minute()
	inside := (q.start < q.end && m >= q.start && m < q.end) || (q.start > q.end && (m >= q.start || m < q.end))
	if !inside {
		return due
	}
	y, mo, d := local.Date()
	end := time.Date(y, mo, d, q.end/60, q.end%60, 0, 0, loc)
	if !end.After(local) {
		end = time.Date(y, mo, d+1, q.end/60, q.end%60, 0, 0, loc)
	}
	return end
}

// ProactiveNudge is the hidden note a follow-up turn ends with.
func (p *Plugin) ProactiveNudge(t *core.Turn) string {
	reason, ago := "you wanted to check in", ""
	if t.Job != nil {
		if r := strings.TrimSpace(t.Job.Text); r != "" {
			reason = r
		}
		ago = core.About(t.Now.Sub(t.Job.CreatedAt)) + " ago "
	}
	loc := t.Location
	if loc == nil {
		loc = time.UTC
	}
	return fmt.Sprintf("(Private note, not from the user: %syou planned to write to them first, because: %s. "+
		"It is now %s for them. If that still fits, write your message now, as yourself. If it no longer fits, answer %s.)",
		ago, reason, t.Now.In(loc).Format("Monday 15:04"), core.SilenceToken)
}

// PromptLayers explains the follow-up token in L1.
func (p *Plugin) PromptLayers(context.Context, *core.Turn) ([]core.PromptLayer, error) {
	return []core.PromptLayer{{Level: core.LayerInstructions, Name: "proactive", Text: instructions}}, nil
}

const instructions = `## Writing first
- To write to the person later on your own (to ask how the exam went, to check on the bread), end your reply with a last line <PROACTIVE>{"delay_seconds": N, "reason": "..."}: N seconds from now (at most 7 days), and a short reason for yourself. They never see that line.
- The follow-up is dropped if they write to you before then. Use it rarely, when a caring friend would.`
