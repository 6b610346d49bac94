package chart

import (
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
)

// ShortLayout is how a due time is shown: on the timeline, the jobs page
// and the overview.
const ShortLayout = "Mon 2 Jan 15:04 MST"

// Timeline is a strip of due times: a dot per job on a time axis
// from now, so clusters and gaps show at a glance. The list under it says
// the same in words.
type Timeline struct {
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

// NewTimeline places rows on a strip from start over span, ticks in
// loc (every 6 hours for a day, every midnight for longer).
func NewTimeline(id string, rows []core.JobRow, start time.Time, span time.Duration, now time.Time, loc *time.Location) Timeline {
	c := Timeline{ID: id, Width: tlWidth, Height: tlHeight, Left: tlLeft, Right: tlRight, AxisY: tlAxisY, LabelY: tlHeight - 6}
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
			Title: fmt.Sprintf("job %d, %s, for %s: %s", j.ID, j.Kind, name, due.In(loc).Format(ShortLayout))})
	}
	c.Summary = fmt.Sprintf("%d jobs on a time line from now", len(rows))
	return c
}
