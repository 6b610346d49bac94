package recurrence_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	// The zones below must load wherever the fuzz target runs.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"

	"github.com/parleybot/parley/core/recurrence"
)

// fuzzZones have clock changes of every kind (see FuzzSchedule).
var fuzzZones = func() []*time.Location {
	locs := []*time.Location{time.UTC, time.FixedZone("+05:45", 5*3600+45*60)}
	for _, name := range []string{
		"America/New_York", "Europe/Berlin", "Europe/Dublin", "Australia/Lord_Howe", "Antarctica/Troll",
		"America/Havana", "America/Santiago", "Pacific/Apia", "Pacific/Kiritimati", "America/Sitka",
		"Pacific/Chatham", "Asia/Kolkata", "America/Danmarkshavn",
	} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			panic(err)
		}
		locs = append(locs, loc)
	}
	return locs
}()

// cronParser reads a 5-field spec the way recurrence documents it
// (robfig/cron's standard parser), for the oracle.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// FuzzSchedule checks Parse, Next and Latest on any schedule text, from
// any moment between 1900 and 2300, in zones with every kind of clock
// change (none, an hour, half an hour, two hours, at midnight, negative
// DST, whole days skipped or repeated): Parse never panics, and an error
// quotes the schedule; a schedule reads back from its String; Next is
// strictly after the moment it is given, or ErrNever for a cron schedule;
// an interval's occurrences are that interval apart; a cron occurrence is
// a wall-clock time the spec names, or the moment a clock change skipped
// to; and Latest agrees with Next: no occurrence lies between the moment
// and Next's answer, which is itself the latest occurrence at its time.
func FuzzSchedule(f *testing.F) {
	for _, s := range []struct {
		spec  string
		after int64
		zone  uint8
	}{
		{"0 9 * * 1-5", 1_774_000_000, 2},
		{"30 2 * * *", 1_772_931_600, 2},     // 2026-03-08 in New York: 02:30 is skipped
		{"30 1 * * *", 1_793_487_600, 2},     // 2026-11-01 in New York: 01:30 comes twice
		{"15 2 * * 0", 1_759_500_000, 5},     // Lord Howe's half hour
		{"0 0 * * *", 1_325_000_000, 9},      // Apia skipped 2011-12-30
		{"*/7 * * * *", 789_000_000, 10},     // Kiritimati skipped 1994-12-31
		{"0 12 18 10 *", -3_226_000_000, 11}, // Sitka repeated 1867-10-18
		{"0 0 30 2 *", 0, 0},
		{"0 0 29 2 *", 1_000_000_000, 12},
		{"@daily", 1_700_000_000, 6},
		{"@every 1h", 0, 0},
		{"every 90m", 1_700_000_000, 3},
		{"EVERY 1 h 30 m", 1_700_000_000, 3},
		{"every 59s", 0, 0},
		{"every 2562047h", 0, 0},
		{"0 9 1 * 1", 1_700_000_000, 7},
		{"59 23 31 12 *", 4_102_444_799, 13},
		{"", 0, 0},
		{"* * * * * *", 0, 0},
	} {
		f.Add(s.spec, s.after, s.zone)
	}
	const from, span = -2_208_988_800, 400 * 365 * 24 * 3600 // 1900 on
	f.Fuzz(func(t *testing.T, spec string, afterUnix int64, zone uint8) {
		loc := fuzzZones[int(zone)%len(fuzzZones)]
		after := time.Unix(from+((afterUnix-from)%span+span)%span, 0).In(loc) // afterUnix if in range
		s, err := recurrence.Parse(spec)
		if err != nil {
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", spec)) {
				t.Fatalf("Parse(%q): the error %q does not quote the schedule", spec, err)
			}
			return
		}
		if s.String() != strings.TrimSpace(spec) {
			t.Fatalf("Parse(%q).String() = %q", spec, s)
		}
		if again, err := recurrence.Parse(s.String()); err != nil || again.String() != s.String() || again.IsInterval() != s.IsInterval() {
			t.Fatalf("Parse(%q) does not read back: %v, %v", s, again, err)
		}

		next, err := s.Next(after, loc)
		if err != nil {
			if !errors.Is(err, recurrence.ErrNever) || s.IsInterval() {
				t.Fatalf("Next(%q, %s): %v", spec, after, err)
			}
			return
		}
		if !next.After(after) {
			t.Fatalf("Next(%q, %s) = %s: not after it", spec, after, next.In(loc))
		}
		if s.IsInterval() {
			every := next.Sub(after)
			second, err := s.Next(next, loc)
			if every < recurrence.MinInterval || err != nil || second.Sub(next) != every {
				t.Fatalf("interval %q: %s, then %s, %v", spec, next, second, err)
			}
		} else {
			requireOccurrence(t, spec, next, loc)
		}
		if got := s.Latest(after, next, loc); !got.Equal(next) {
			t.Fatalf("Latest(%q, %s, %s) = %s, want Next's answer", spec, after, next.In(loc), got.In(loc))
		}
		if before := next.Add(-time.Second); before.After(after) {
			if got := s.Latest(after, before, loc); !got.Equal(after) {
				t.Fatalf("%q: Latest finds %s between %s and Next's %s",
					spec, got.In(loc), after.In(loc), next.In(loc))
			}
		}
	})
}

// requireOccurrence fails unless at is an occurrence of the cron spec in
// loc: its wall clock is one the spec names, or it is the end of a clock
// change that skipped one.
func requireOccurrence(t *testing.T, spec string, at time.Time, loc *time.Location) {
	t.Helper()
	sched, err := cronParser.Parse(strings.TrimSpace(spec))
	if err != nil {
		t.Fatalf("recurrence read %q, cron does not: %v", spec, err)
	}
	c := sched.(*cron.SpecSchedule)
	l := at.In(loc)
	if l.Second() == 0 && c.Minute&(1<<uint(l.Minute())) != 0 && c.Hour&(1<<uint(l.Hour())) != 0 && dayMatches(c, l) {
		return
	}
	_, before := at.Add(-time.Second).Zone()
	_, now := l.Zone()
	if before >= now {
		t.Fatalf("Next(%q) = %s: not a time the spec names, nor the end of a skipped one", spec, l)
	}
}

// dayMatches is cron's day rule: with both day fields restricted either
// may match, otherwise both must.
func dayMatches(c *cron.SpecSchedule, l time.Time) bool {
	const star = 1 << 63
	if c.Month&(1<<uint(l.Month())) == 0 {
		return false
	}
	dom, dow := c.Dom&(1<<uint(l.Day())) != 0, c.Dow&(1<<uint(l.Weekday())) != 0
	if c.Dom&star != 0 || c.Dow&star != 0 {
		return dom && dow
	}
	return dom || dow
}
