package chart

import (
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

// The mood chart's geometry, in SVG user units: a plot area with room on
// the left for the axis labels and below for the time labels.
const (
	chartWidth  = 720
	chartHeight = 240
	plotLeft    = 44
	plotRight   = chartWidth - 12
	plotTop     = 12
	plotBottom  = chartHeight - 28
)

// Mood is an inline SVG chart of valence and arousal over time,
// computed here so the page needs no script.
type Mood struct {
	Width, Height int
	Left, Right   int
	// AxisX is where the value labels end, left of the plot.
	AxisX int
	// Ticks are the horizontal lines at -1, 0 and 1.
	Ticks []moodTick
	// Points holds one mark per mood point, in time order.
	Points []moodMark
	// ValenceLine and ArousalLine are SVG polyline points.
	ValenceLine, ArousalLine string
	// From and To label the time axis.
	From, To string
	LabelY   int
}

type moodTick struct {
	Y     float64
	Label string
	// Solid draws the line (the zero line); the others are dashed.
	Solid bool
}

type moodMark struct {
	X, ValenceY, ArousalY float64
	// Title is the point's tooltip.
	Title string
}

// NewMood places points (oldest first) on the chart: time runs left
// to right, values -1…1 bottom to top. Points all at one instant are
// spread evenly instead, so each stays visible.
func NewMood(points []core.MoodPoint, at func(time.Time) string) Mood {
	c := Mood{Width: chartWidth, Height: chartHeight, Left: plotLeft, Right: plotRight, AxisX: plotLeft - 6,
		LabelY: chartHeight - 8}
	c.Ticks = []moodTick{{Y: yOf(1), Label: "+1"}, {Y: yOf(0), Label: "0", Solid: true}, {Y: yOf(-1), Label: "−1"}}
	if len(points) == 0 {
		return c
	}
	first, last := points[0].CreatedAt, points[len(points)-1].CreatedAt
	span := last.Sub(first)
	var vLine, aLine strings.Builder
	for i, p := range points {
		var frac float64
		switch {
		case span > 0:
			frac = float64(p.CreatedAt.Sub(first)) / float64(span)
		case len(points) > 1:
			frac = float64(i) / float64(len(points)-1)
		default:
			frac = 0.5
		}
		m := moodMark{X: plotLeft + frac*(plotRight-plotLeft), ValenceY: yOf(p.Valence), ArousalY: yOf(p.Arousal),
			Title: fmt.Sprintf("%s: valence %+.2f, arousal %+.2f (%s)", at(p.CreatedAt), p.Valence, p.Arousal, p.Source)}
		if p.Reason != "" {
			m.Title += ": " + p.Reason
		}
		c.Points = append(c.Points, m)
		fmt.Fprintf(&vLine, "%.1f,%.1f ", m.X, m.ValenceY)
		fmt.Fprintf(&aLine, "%.1f,%.1f ", m.X, m.ArousalY)
	}
	c.ValenceLine, c.ArousalLine = strings.TrimSpace(vLine.String()), strings.TrimSpace(aLine.String())
	c.From, c.To = at(first), at(last)
	return c
}

// yOf maps a value in -1…1 (clamped) to the plot's y.
func yOf(v float64) float64 {
	v = min(max(v, -1), 1)
	return plotTop + (1-v)/2*(plotBottom-plotTop)
}
