package mood_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/plugins/mood"
	"github.com/parleybot/parley/store"
)

func TestDecayFollowsTheFormula(t *testing.T) {
	t.Parallel()
	base := mood.Point{Valence: 0.2, Arousal: -0.1}
	last := mood.Point{Valence: 0.8, Arousal: 0.6}
	// Figures computed apart from the code (Python, math.exp), f = exp(-0.15 h).
	for _, tc := range []struct {
		hours    float64
		val, aro float64
	}{
		{0, 0.8, 0.6},
		{1, 0.7164248, 0.5024956},    // f = 0.8607080
		{math.Ln2 / 0.15, 0.5, 0.25}, // the half-life: halfway back
		{4, 0.5292870, 0.2841681},    // f = 0.5488116
		{12, 0.2991793, 0.0157092},   // f = 0.1652989
		{24, 0.2163942, -0.0808734},  // f = 0.0273237
		{26, 0.2121451, -0.0858307},  // f = 0.0202419
		{36, 0.2027099, -0.0968384},  // f = 0.0045166
		{72, 0.2000122, -0.0999857},  // f = 0.0000204
		{1000, 0.2, -0.1},            // back at the baseline
		{-3, 0.8, 0.6},               // a clock that went back decays nothing
	} {
		got := mood.Decay(base, last, 0.15, time.Duration(tc.hours*float64(time.Hour)))
		require.InDelta(t, tc.val, got.Valence, 1e-6, "valence after %vh", tc.hours)
		require.InDelta(t, tc.aro, got.Arousal, 1e-6, "arousal after %vh", tc.hours)
	}
}

type bundle struct {
	ctx    context.Context
	st     *store.Store
	points *mood.Points
	clock  *coretest.Clock
	p      *mood.Plugin
	conv   core.Conversation
}

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "p.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	p := mood.New()
	require.NoError(t, st.Migrate(ctx, p))
	clock := coretest.NewClock(t0)
	require.NoError(t, p.Provision(ctx, core.Env{Store: st, Database: st.Database(), Clock: clock}))
	require.NoError(t, p.Validate())
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: "u", Text: "hi", Now: t0, SessionGap: 10 * time.Minute})
	require.NoError(t, err)
	return &bundle{ctx: ctx, st: st, points: mood.NewPoints(st.Database()), clock: clock, p: p, conv: res.Conversation}
}

// turn is the turn of the conversation's current record at now.
func (b *bundle) turn(t *testing.T, now time.Time) *core.Turn {
	t.Helper()
	conv, err := b.st.Conversation(b.ctx, b.conv.ID)
	require.NoError(t, err)
	rec, err := b.st.SessionRecord(b.ctx, *conv.CurrentRecordID)
	require.NoError(t, err)
	return &core.Turn{Conversation: conv, Record: rec, Now: now, Location: time.UTC}
}

func (b *bundle) setMood(t *testing.T, turn *core.Turn, args string) (string, error) {
	t.Helper()
	tools, err := b.p.Tools(b.ctx, turn)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	require.Equal(t, "set_mood", tools[0].Name)
	require.True(t, json.Valid(tools[0].Parameters))
	return tools[0].Call(b.ctx, json.RawMessage(args))
}

func TestMoodAcrossRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.turn(t, t0)
	layers, err := b.p.PromptLayers(b.ctx, first)
	require.NoError(t, err)
	require.Len(t, layers, 2)
	require.Contains(t, layers[1].Text, "valence 0.20 (pleasant), arousal -0.10 (even)", "a new user starts at the baseline")

	out, err := b.setMood(t, first, `{"valence":0.8,"arousal":0.6,"reason":"good news"}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"valence":0.80,"arousal":0.60}`, out)
	rec, err := b.st.SessionRecord(b.ctx, first.Record.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"valence":0.80,"arousal":0.60}`, rec.FinalMood, "the record keeps its last mood")

	// Twelve hours later a new record starts from the decayed mood.
	later := t0.Add(12 * time.Hour)
	_, err = b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: web, ChannelThreadID: "u", Text: "back", Now: later, SessionGap: 10 * time.Minute})
	require.NoError(t, err)
	second := b.turn(t, later)
	require.NotEqual(t, first.Record.ID, second.Record.ID)
	layers, err = b.p.PromptLayers(b.ctx, second)
	require.NoError(t, err)
	f := math.Exp(-0.15 * 12)
	want := mood.Point{Valence: 0.2 + 0.6*f, Arousal: -0.1 + 0.7*f}
	require.Contains(t, layers[1].Text, "valence 0.30 (pleasant), arousal 0.02 (even)")
	last, err := b.points.Latest(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Equal(t, "initial", last.Source)
	require.InDelta(t, want.Valence, last.Valence, 1e-9)
	require.InDelta(t, want.Arousal, last.Arousal, 1e-9)
	require.Equal(t, second.Record.ID, *last.SessionRecordID)

	rec2, err := b.st.SessionRecord(b.ctx, second.Record.ID)
	require.NoError(t, err)
	require.JSONEq(t, `{"valence":0.30,"arousal":0.02}`, rec2.FinalMood, "a record with no change ends with its initial mood")

	// Asking again within the record keeps the same initial mood.
	_, err = b.p.PromptLayers(b.ctx, second)
	require.NoError(t, err)
	hist, err := b.points.MoodHistory(b.ctx, b.conv.ID, 10)
	require.NoError(t, err)
	require.Len(t, hist, 3, "the history the chart draws")
	require.Equal(t, []string{"initial", "set_mood", "initial"}, []string{hist[0].Source, hist[1].Source, hist[2].Source})
}

func TestSetMoodBoundsAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	turn := b.turn(t, t0)
	out, err := b.setMood(t, turn, `{"valence":-0.9,"arousal":0.1}`)
	require.NoError(t, err)
	require.JSONEq(t, `{"valence":-0.50,"arousal":0.10,"note":"valence is kept at or above -0.50"}`, out, "never hostile")
	last, err := b.points.Latest(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.InDelta(t, -0.5, last.Valence, 1e-9)

	for args, want := range map[string]string{
		`{"valence":2,"arousal":0}`:              "between -1 and 1",
		`{"valence":0.1}`:                        "both required",
		`{"valence":"high","arousal":0}`:         "want {",
		`{"valence":0.1,"arousal":0,"mood":"x"}`: "unknown field",
	} {
		_, err := b.setMood(t, turn, args)
		require.ErrorContains(t, err, want, args)
	}
	hist, err := b.points.MoodHistory(b.ctx, b.conv.ID, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1, "a bad call stores nothing")
	require.Equal(t, "set_mood", hist[0].Source)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	p := mood.New()
	p.Baseline.Valence = 1.5
	require.ErrorContains(t, p.Validate(), "baseline.valence must be between -1 and 1")
	p = mood.New()
	p.MinValence, p.Baseline.Valence = -0.1, -0.3
	require.ErrorContains(t, p.Validate(), "baseline.valence -0.3 is below min_valence -0.1")
	p = mood.New()
	p.DecayPerHour = -1
	require.ErrorContains(t, p.Validate(), "decay_per_hour must be between 0 and 10")
}
