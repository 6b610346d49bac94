// Package mood gives the bot a mood per user: valence (unpleasant −1 …
// pleasant 1) and arousal (calm −1 … excited 1). At the start of a
// session record the mood has decayed from where the last session left it
// towards a baseline, exponentially with the hours between:
//
//	initial = baseline + (last − baseline) · exp(−decay_per_hour · Δt)
//
// During the session the model changes it with the set_mood tool; each
// change is kept (the history feeds the console's chart) and the mood at
// the end of the record is stored on it. Valence never goes below
// min_valence, so a bad day can never turn the persona hostile.
package mood

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/parleybot/parley/core"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "mood", New: func() core.Plugin { return New() }})
}

// Store is what the plugin writes of the store's own rows: the mood a
// session record ends with. store implements it.
type Store interface {
	SetFinalMood(ctx context.Context, recordID int64, mood string) error
}

// Point is a mood: valence and arousal, each in [-1, 1].
type Point struct {
	Valence float64 `yaml:"valence" json:"valence"`
	Arousal float64 `yaml:"arousal" json:"arousal"`
}

// Plugin is the mood plugin; its exported fields are its config
// (plugins.mood).
type Plugin struct {
	// Baseline is the mood the bot returns to (default valence 0.2,
	// arousal -0.1).
	Baseline Point `yaml:"baseline"`
	// DecayPerHour is k in exp(−k·Δt): how fast the mood returns to the
	// baseline between sessions (default 0.15, about a 4.6-hour half-life).
	DecayPerHour float64 `yaml:"decay_per_hour"`
	// MinValence is the floor under valence (default -0.5): the persona
	// can be sad or tired, never hostile.
	MinValence float64 `yaml:"min_valence"`

	store  Store
	points *Points
	clock  core.Clock
}

// Interface guards.
var (
	_ core.Plugin            = (*Plugin)(nil)
	_ core.Provisioner       = (*Plugin)(nil)
	_ core.Validator         = (*Plugin)(nil)
	_ core.PromptContributor = (*Plugin)(nil)
	_ core.ToolProvider      = (*Plugin)(nil)
	_ core.Migrator          = (*Plugin)(nil)
	_ core.MoodOwner         = (*Plugin)(nil)
)

// New returns the plugin with its defaults.
func New() *Plugin {
	return &Plugin{Baseline: Point{Valence: 0.2, Arousal: -0.1}, DecayPerHour: 0.15, MinValence: -0.5}
}

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "mood" }

// Provision takes the store, the database of its own table and the
// clock.
func (p *Plugin) Provision(_ context.Context, env core.Env) error {
	st, ok := env.Store.(Store)
	if !ok {
		return fmt.Errorf("mood: the store (%T) cannot keep moods", env.Store)
	}
	if env.Database == nil {
		return errors.New("mood: no database to keep moods in")
	}
	p.store, p.clock = st, env.Clock
	if p.clock == nil {
		p.clock = core.SystemClock{}
	}
	p.points = NewPoints(env.Database)
	p.points.clock = p.clock
	return nil
}

// MoodKeeper reads the mood points kept in db, for the console's chart;
// it needs no provisioning.
func (p *Plugin) MoodKeeper(db core.Database) core.MoodKeeper { return NewPoints(db) }

// Validate checks the ranges.
func (p *Plugin) Validate() error {
	var errs []error
	in := func(name string, v, lo, hi float64) {
		if math.IsNaN(v) || v < lo || v > hi {
			errs = append(errs, fmt.Errorf("mood: %s must be between %g and %g, got %g", name, lo, hi, v))
		}
	}
	in("baseline.valence", p.Baseline.Valence, -1, 1)
	in("baseline.arousal", p.Baseline.Arousal, -1, 1)
	in("decay_per_hour", p.DecayPerHour, 0, 10)
	in("min_valence", p.MinValence, -1, 0)
	if p.Baseline.Valence < p.MinValence {
		errs = append(errs, fmt.Errorf("mood: baseline.valence %g is below min_valence %g", p.Baseline.Valence, p.MinValence))
	}
	return errors.Join(errs...)
}

// Decay is the mood at a record's start: last, decayed towards baseline
// over elapsed at k per hour (each axis on its own).
func Decay(baseline, last Point, k float64, elapsed time.Duration) Point {
	f := math.Exp(-k * max(elapsed.Hours(), 0))
	return Point{
		Valence: baseline.Valence + (last.Valence-baseline.Valence)*f,
		Arousal: baseline.Arousal + (last.Arousal-baseline.Arousal)*f,
	}
}

// clamp keeps a mood inside its bounds.
func (p *Plugin) clamp(m Point) Point {
	return Point{Valence: min(max(m.Valence, p.MinValence), 1), Arousal: min(max(m.Arousal, -1), 1)}
}

// initial returns the mood at the start of the turn's record, storing it
// the first time it is asked for: the plugin renders its layers once per
// record, so that is when the record starts.
func (p *Plugin) initial(ctx context.Context, t *core.Turn) (Point, error) {
	last, err := p.points.Latest(ctx, t.Conversation.ID)
	switch {
	case core.IsNotFound(err):
		last = core.MoodPoint{Valence: p.Baseline.Valence, Arousal: p.Baseline.Arousal, CreatedAt: t.Now}
	case err != nil:
		return Point{}, fmt.Errorf("mood: %w", err)
	}
	if t.Record.ID != 0 && last.SessionRecordID != nil && *last.SessionRecordID == t.Record.ID {
		return Point{Valence: last.Valence, Arousal: last.Arousal}, nil
	}
	start := t.Now
	if t.Record.ID != 0 {
		start = t.Record.StartedAt
	}
	m := p.clamp(Decay(p.Baseline, Point{last.Valence, last.Arousal}, p.DecayPerHour, start.Sub(last.CreatedAt)))
	if t.Record.ID != 0 {
		id := t.Record.ID
		pt := &core.MoodPoint{ConversationID: t.Conversation.ID, SessionRecordID: &id, Valence: m.Valence,
			Arousal: m.Arousal, Source: "initial", CreatedAt: start}
		if err := p.record(ctx, pt); err != nil {
			return Point{}, fmt.Errorf("mood: %w", err)
		}
	}
	return m, nil
}

// record stores a mood point and, when it belongs to a record, makes it
// the record's final mood: the last one stored is the one the record ends
// with. Written when the mood changes, not after every turn.
func (p *Plugin) record(ctx context.Context, pt *core.MoodPoint) error {
	if err := p.points.Add(ctx, pt); err != nil {
		return err
	}
	if pt.SessionRecordID == nil {
		return nil
	}
	snap := fmt.Sprintf(`{"valence":%s,"arousal":%s}`, num(pt.Valence), num(pt.Arousal))
	return p.store.SetFinalMood(ctx, *pt.SessionRecordID, snap)
}

// num writes a mood value with two decimals.
func num(v float64) string { return fmt.Sprintf("%.2f", v) }
