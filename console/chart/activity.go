// Package chart lays out the console's charts (activity, the jobs'
// timeline, mood) as inline SVG geometry, so its pages need no script.
package chart

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

// The activity chart's geometry, in SVG user units.
const (
	actWidth  = 720
	actHeight = 220
	actLeft   = 56
	actRight  = actWidth - 8
	actTop    = 14
	actBottom = actHeight - 36
	// actTicks is how many steps the value axis has.
	actTicks = 4
)

// Activity is an inline SVG bar chart of messages and turns per
// interval, computed here so the page needs no script: per interval one
// bar of messages (received under sent) and one of turns (failed ones on
// top, in red).
type Activity struct {
	// ID is the chart's element id; Title says what it covers.
	ID, Title      string
	Width, Height  int
	Left, Right    int
	Bottom, LabelY int
	Ticks          []chartTick
	Bars           []activityBar
	Labels         []chartLabel
	// Totals over the chart.
	In, Out, Turns, Failed int64
	// Summary says the totals in words (the chart's accessible name).
	Summary string
}

type chartTick struct {
	Y     float64
	Label string
}

type chartLabel struct {
	X     float64
	Text  string
	Color string
}

// activityBar is one interval: two stacked bars and a tooltip.
type activityBar struct {
	Title string
	// Range is the interval as the table shows it.
	Range                  string
	In, Out, Turns, Failed int64
	// The bars' rectangles.
	MsgX, TurnX, W                         float64
	InY, InH, OutY, OutH, OkY, OkH, FY, FH float64
}

// NewActivity lays out n buckets of size bucket from since (the
// store's buckets are placed by their start; missing ones are empty),
// with a time label every labelEvery buckets, in loc.
func NewActivity(id, title string, got []core.ActivityBucket, since time.Time, bucket time.Duration, n, labelEvery int, loc *time.Location) Activity {
	c := Activity{ID: id, Title: title, Width: actWidth, Height: actHeight, Left: actLeft, Right: actRight,
		Bottom: actBottom, LabelY: actHeight - 8}
	grid := make([]core.ActivityBucket, n)
	for _, b := range got {
		i := int(b.Start.Sub(since) / bucket)
		if b.Start.Before(since) || i >= n {
			continue
		}
		g := &grid[i]
		g.Inbound += b.Inbound
		g.Outbound += b.Outbound
		g.Turns += b.Turns
		g.Failed += b.Failed
	}
	var top int64
	for _, g := range grid {
		top = max(top, g.Inbound+g.Outbound, g.Turns)
		c.In += g.Inbound
		c.Out += g.Outbound
		c.Turns += g.Turns
		c.Failed += g.Failed
	}
	step := niceStep(top)
	scaleTop := float64(step * actTicks)
	yOf := func(v int64) float64 { return actBottom - float64(v)/scaleTop*(actBottom-actTop) }
	for i := 0; i <= actTicks; i++ {
		v := step * int64(i)
		c.Ticks = append(c.Ticks, chartTick{Y: yOf(v), Label: Count(v)})
	}
	slot := float64(actRight-actLeft) / float64(n)
	w := math.Max(slot*0.36, 1)
	clock := "15:04"
	for i, g := range grid {
		start := since.Add(time.Duration(i) * bucket).In(loc)
		end := start.Add(bucket)
		x := actLeft + float64(i)*slot
		b := activityBar{In: g.Inbound, Out: g.Outbound, Turns: g.Turns, Failed: g.Failed,
			Range: start.Format(clock) + "–" + end.Format(clock),
			MsgX:  x + slot*0.1, TurnX: x + slot*0.1 + w + slot*0.04, W: w}
		b.Title = fmt.Sprintf("%s: %d messages received, %d sent; %d turns, %d failed", b.Range, g.Inbound, g.Outbound, g.Turns, g.Failed)
		b.InY, b.InH = yOf(g.Inbound), actBottom-yOf(g.Inbound)
		b.OutY, b.OutH = yOf(g.Inbound+g.Outbound), yOf(g.Inbound)-yOf(g.Inbound+g.Outbound)
		ok := g.Turns - min(g.Failed, g.Turns)
		b.OkY, b.OkH = yOf(ok), actBottom-yOf(ok)
		b.FY, b.FH = yOf(g.Turns), yOf(ok)-yOf(g.Turns)
		c.Bars = append(c.Bars, b)
		if labelEvery > 0 && i%labelEvery == 0 {
			c.Labels = append(c.Labels, chartLabel{X: x, Text: start.Format(clock)})
		}
	}
	c.Summary = fmt.Sprintf("%s: %d messages received and %d sent; %d turns, %d of them failed", title, c.In, c.Out, c.Turns, c.Failed)
	return c
}

// niceStep is a round step (1, 2 or 5 times a power of ten) such that
// actTicks steps reach top.
func niceStep(top int64) int64 {
	if top <= actTicks {
		return 1
	}
	raw := float64(top) / actTicks
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return int64(math.Ceil(m * p))
		}
	}
	return int64(math.Ceil(raw))
}

// The timeline strip's geometry.
const (
	tlWidth  = 720
	tlHeight = 62
	tlLeft   = 16
	tlRight  = tlWidth - 16
	tlAxisY  = 38
	// tlMinGap keeps tick labels off the "now" at the left end.
	tlMinGap = 60
)

// Count writes n with thousands separators: 1,234,567.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
