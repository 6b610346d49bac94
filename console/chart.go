package console

import (
	"fmt"
	"math"
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

// activityChart is an inline SVG bar chart of messages and turns per
// interval, computed here so the page needs no script: per interval one
// bar of messages (received under sent) and one of turns (failed ones on
// top, in red).
type activityChart struct {
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

// newActivityChart lays out n buckets of size bucket from since (the
// store's buckets are placed by their start; missing ones are empty),
// with a time label every labelEvery buckets, in loc.
func newActivityChart(id, title string, got []core.ActivityBucket, since time.Time, bucket time.Duration, n, labelEvery int, loc *time.Location) activityChart {
	c := activityChart{ID: id, Title: title, Width: actWidth, Height: actHeight, Left: actLeft, Right: actRight,
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
		c.Ticks = append(c.Ticks, chartTick{Y: yOf(v), Label: count(v)})
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

// timelineChart is a strip of due times: a dot per job on a time axis
// from now, so clusters and gaps show at a glance. The list under it says
// the same in words.
type timelineChart struct {
	ID            string
	Width, Height int
	Left, Right   int
	AxisY, LabelY int
	Ticks         []chartLabel
	Dots          []timelineDot
	Summary       string
}

type timelineDot struct {
	X, Y  float64
	Title string
	// Overdue marks a job already due (drawn at the left end, in red).
	Overdue bool
}

// newTimelineChart places rows on a strip from start over span, ticks in
// loc (every 6 hours for a day, every midnight for longer).
func newTimelineChart(id string, rows []core.JobRow, start time.Time, span time.Duration, now time.Time, loc *time.Location) timelineChart {
	c := timelineChart{ID: id, Width: tlWidth, Height: tlHeight, Left: tlLeft, Right: tlRight, AxisY: tlAxisY, LabelY: tlHeight - 6}
	xOf := func(t time.Time) float64 {
		f := float64(t.Sub(start)) / float64(span)
		return tlLeft + min(max(f, 0), 1)*(tlRight-tlLeft)
	}
	if span <= 24*time.Hour {
		first := start.In(loc).Truncate(time.Hour)
		for t := first; !t.After(start.Add(span)); t = t.Add(time.Hour) {
			if t.Before(start) || t.In(loc).Hour()%6 != 0 || xOf(t) < tlLeft+tlMinGap {
				continue
			}
			c.Ticks = append(c.Ticks, chartLabel{X: xOf(t), Text: t.In(loc).Format("15:04")})
		}
	} else {
		y, m, d := start.In(loc).Date()
		for i := 1; i <= int(span/(24*time.Hour)); i++ {
			t := time.Date(y, m, d+i, 0, 0, 0, 0, loc)
			if xOf(t) < tlLeft+tlMinGap {
				continue // it would cover "now"
			}
			c.Ticks = append(c.Ticks, chartLabel{X: xOf(t), Text: t.Format("Mon 2")})
		}
	}
	// Dots at one spot are stacked upwards, a few high at most.
	stack := map[int]int{}
	for _, j := range rows {
		due := j.DueAt
		if j.NextRunAt != nil && j.Status == core.JobPending {
			due = *j.NextRunAt
		}
		x := xOf(due)
		k := stack[int(x/6)]
		stack[int(x/6)]++
		if k > 3 {
			continue
		}
		name := j.DisplayName
		if name == "" {
			name = fmt.Sprintf("conversation %d", j.ConversationID)
		}
		c.Dots = append(c.Dots, timelineDot{X: x, Y: tlAxisY - 8 - float64(k)*8, Overdue: due.Before(now),
			Title: fmt.Sprintf("job %d, %s, for %s: %s", j.ID, j.Kind, name, due.In(loc).Format(shortLayout))})
	}
	c.Summary = fmt.Sprintf("%d jobs on a time line from now", len(rows))
	return c
}
