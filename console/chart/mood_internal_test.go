package chart

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestMoodChartGeometry(t *testing.T) {
	t.Parallel()
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

	empty := NewMood(nil, at)
	require.Empty(t, empty.Points)
	require.Len(t, empty.Ticks, 3)

	// Values map -1…1 to bottom…top, clamped; the axes are -1…1.
	c := NewMood([]core.MoodPoint{
		{Valence: 1, Arousal: -1, CreatedAt: t0},
		{Valence: 0, Arousal: 3, CreatedAt: t0.Add(time.Hour)},
		{Valence: -7, Arousal: 0.5, CreatedAt: t0.Add(4 * time.Hour)},
	}, at)
	require.Len(t, c.Points, 3)
	require.Equal(t, []float64{plotTop, yOf(0), plotBottom}, []float64{c.Points[0].ValenceY, c.Points[1].ValenceY, c.Points[2].ValenceY})
	require.Equal(t, float64(plotBottom), c.Points[0].ArousalY)
	require.Equal(t, float64(plotTop), c.Points[1].ArousalY, "3 is drawn at the top, not off the chart")
	require.Equal(t, float64(plotTop+plotBottom)/2, yOf(0))
	// x follows time: a quarter of the span after one hour of four.
	require.Equal(t, float64(plotLeft), c.Points[0].X)
	require.InDelta(t, plotLeft+0.25*(plotRight-plotLeft), c.Points[1].X, 1e-9)
	require.Equal(t, float64(plotRight), c.Points[2].X)
	require.Equal(t, "2030-01-01T00:00:00Z", c.From)
	require.Equal(t, "2030-01-01T04:00:00Z", c.To)

	// Points at one instant are spread so each stays visible; a single
	// point sits in the middle.
	same := NewMood([]core.MoodPoint{{CreatedAt: t0}, {CreatedAt: t0}, {CreatedAt: t0}}, at)
	require.Equal(t, []float64{plotLeft, (plotLeft + plotRight) / 2.0, plotRight},
		[]float64{same.Points[0].X, same.Points[1].X, same.Points[2].X})
	one := NewMood([]core.MoodPoint{{CreatedAt: t0}}, at)
	require.Equal(t, (plotLeft+plotRight)/2.0, one.Points[0].X)
}
