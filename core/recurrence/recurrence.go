// Package recurrence reads a recurring job's schedule and finds its next
// occurrence in the conversation's time zone. A schedule is a 5-field cron
// expression ("0 9 * * 1-5", read by robfig/cron's standard parser,
// descriptors like "@daily" too) or an interval ("every 2h").
//
// Cron times are wall-clock times in the zone, and daylight saving time
// changes are settled so that no occurrence is lost or doubled:
//
//   - a time the clocks skip (spring forward: 02:30 in New York on the
//     second Sunday of March) runs right after the jump (03:00);
//   - a time the clocks repeat (fall back: 01:30 on the first Sunday of
//     November) runs once, at its first occurrence.
//
// Intervals are real durations, whatever the zone.
package recurrence

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MinInterval is the shortest interval a schedule may have.
const MinInterval = time.Minute

// horizon bounds the search for a cron schedule's next occurrence
// ("0 0 30 2 *", the 30th of February, never comes).
const horizon = 5 * 366

// Schedule is a parsed recurrence.
type Schedule struct {
	text  string
	spec  *cron.SpecSchedule
	every time.Duration
}

var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse reads a schedule: "every <duration>" (at least MinInterval) or a
// 5-field cron expression.
func Parse(s string) (*Schedule, error) {
	text := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(strings.ToLower(text), "every "); ok {
		d, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSpace(rest), " ", ""))
		if err != nil {
			return nil, fmt.Errorf("schedule %q: the interval is not a duration like 2h or 30m", s)
		}
		if d < MinInterval {
			return nil, fmt.Errorf("schedule %q: the interval must be at least %s", s, MinInterval)
		}
		return &Schedule{text: text, every: d}, nil
	}
	if strings.HasPrefix(text, "@every") {
		return nil, fmt.Errorf("schedule %q: write an interval as \"every 2h\"", s)
	}
	sched, err := parser.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: not a 5-field cron expression (minute hour day-of-month month day-of-week) or \"every <duration>\": %v", s, err)
	}
	spec, ok := sched.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("schedule %q: unsupported", s)
	}
	return &Schedule{text: text, spec: spec}, nil
}

// IsInterval reports whether the schedule is an interval ("every 2h"),
// the same in every time zone.
func (s *Schedule) IsInterval() bool { return s.every > 0 }

// String is the schedule as written.
func (s *Schedule) String() string { return s.text }

// ErrNever is returned for a cron schedule with no occurrence within five
// years (the 30th of February).
var ErrNever = errors.New("the schedule has no occurrence in the next five years")

// Next returns the schedule's first occurrence strictly after after, with
// cron times read in loc.
func (s *Schedule) Next(after time.Time, loc *time.Location) (time.Time, error) {
	if s.every > 0 {
		return after.Add(s.every), nil
	}
	if loc == nil {
		loc = time.UTC
	}
	local := after.In(loc)
	y, m, d := local.Date()
	for day := 0; day < horizon; day++ {
		date := time.Date(y, m, d+day, 12, 0, 0, 0, loc) // noon: never in a DST change
		if !s.dayMatches(date) {
			continue
		}
		for h := 0; h < 24; h++ {
			if s.spec.Hour&(1<<uint(h)) == 0 {
				continue
			}
			for min := 0; min < 60; min++ {
				if s.spec.Minute&(1<<uint(min)) == 0 {
					continue
				}
				at := wallTime(date.Year(), date.Month(), date.Day(), h, min, loc)
				if at.After(after) {
					return at, nil
				}
			}
		}
	}
	return time.Time{}, ErrNever
}

// Latest returns the schedule's latest occurrence at or before now,
// counting from first, itself an occurrence: first when no later one has
// come. Intervals count on from first; cron times are read in loc. It is
// how a scheduler that was down finds the one occurrence to catch up on.
func (s *Schedule) Latest(first, now time.Time, loc *time.Location) time.Time {
	if !now.After(first) {
		return first
	}
	if s.every > 0 {
		return first.Add(now.Sub(first) / s.every * s.every)
	}
	if loc == nil {
		loc = time.UTC
	}
	local := now.In(loc)
	y, m, d := local.Date()
	for day := 0; day < horizon; day++ {
		date := time.Date(y, m, d-day, 12, 0, 0, 0, loc)
		if date.Add(24 * time.Hour).Before(first) {
			break
		}
		if !s.dayMatches(date) {
			continue
		}
		for h := 23; h >= 0; h-- {
			if s.spec.Hour&(1<<uint(h)) == 0 {
				continue
			}
			for min := 59; min >= 0; min-- {
				if s.spec.Minute&(1<<uint(min)) == 0 {
					continue
				}
				at := wallTime(date.Year(), date.Month(), date.Day(), h, min, loc)
				if !at.After(now) {
					if at.Before(first) {
						return first
					}
					return at
				}
			}
		}
	}
	return first
}

// wallTime is WallTime without seconds.
func wallTime(y int, mo time.Month, d, h, min int, loc *time.Location) time.Time {
	return WallTime(y, mo, d, h, min, 0, loc)
}

// WallTime is the instant of a wall-clock time in loc: the moment right
// after the jump for a time the clocks skip (spring forward), the first
// occurrence of a time they repeat (fall back). time.Date leaves both
// choices to chance. Clock changes of any size are settled, a whole day
// skipped or repeated (Samoa in 2011, Sitka in 1867) included.
func WallTime(y int, mo time.Month, d, h, min, sec int, loc *time.Location) time.Time {
	t := time.Date(y, mo, d, h, min, sec, 0, loc)
	wall := time.Date(y, mo, d, h, min, sec, 0, time.UTC)
	if !sameWall(t, wall) {
		return Jump(t)
	}
	// Repeated? Then the same wall time also stood before the clocks went
	// back, by the difference of the offsets, if t is that close to the
	// change.
	if start, _ := t.ZoneBounds(); !start.IsZero() {
		_, before := start.Add(-time.Second).Zone()
		_, after := t.Zone()
		if back := time.Duration(before-after) * time.Second; back > 0 && t.Sub(start) < back {
			if earlier := t.Add(-back); sameWall(earlier.In(loc), wall) {
				return earlier
			}
		}
	}
	return t
}

// sameWall reports whether t's wall clock in its location is wall's in UTC.
func sameWall(t, wall time.Time) bool {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	wy, wmo, wd := wall.Date()
	wh, wmi, ws := wall.Clock()
	return y == wy && mo == wmo && d == wd && h == wh && mi == wmi && s == ws
}

// Jump returns the clock change next to t, for t that time.Date made of a
// wall time the clocks skip: Go reads such a time with the offset from
// before or after the jump (it does not say which), so t lies within the
// jump's size after the start of its zone period, or before its end, and
// that boundary is the jump.
func Jump(t time.Time) time.Time {
	start, end := t.ZoneBounds()
	_, off := t.Zone()
	if !start.IsZero() {
		_, before := start.Add(-time.Second).Zone()
		if gap := time.Duration(off-before) * time.Second; gap > 0 && t.Sub(start) >= 0 && t.Sub(start) < gap {
			return start
		}
	}
	if !end.IsZero() {
		_, after := end.Zone()
		if gap := time.Duration(after-off) * time.Second; gap > 0 && end.Sub(t) > 0 && end.Sub(t) <= gap {
			return end
		}
	}
	return t
}

// starBit marks a day field written as "*" (robfig/cron's convention).
const starBit = 1 << 63

// dayMatches applies cron's day rule: with both day-of-month and
// day-of-week restricted, either may match; otherwise both must.
func (s *Schedule) dayMatches(t time.Time) bool {
	if s.spec.Month&(1<<uint(t.Month())) == 0 {
		return false
	}
	dom := s.spec.Dom&(1<<uint(t.Day())) > 0
	dow := s.spec.Dow&(1<<uint(t.Weekday())) > 0
	if s.spec.Dom&starBit > 0 || s.spec.Dow&starBit > 0 {
		return dom && dow
	}
	return dom || dow
}
