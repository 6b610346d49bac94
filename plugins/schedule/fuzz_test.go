package schedule_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	// The zones below must load wherever the fuzz target runs.
	_ "time/tzdata"

	"github.com/parleybot/parley/plugins/schedule"
)

// fuzzZones are time zones with every kind of clock change: none, the
// usual hour, half an hour (Lord Howe), two hours (Troll), at midnight
// (Havana, Santiago), negative DST (Dublin), three hours
// (Danmarkshavn in 1996), whole days skipped (Apia in 2011, Kiritimati in
// 1994), a day repeated (Sitka in 1867), and local mean time offsets with
// seconds before standard time (Havana in 1890).
var fuzzZones = func() []*time.Location {
	locs := []*time.Location{time.UTC, time.FixedZone("+05:45", 5*3600+45*60), time.FixedZone("-09:30", -(9*3600 + 30*60))}
	for _, name := range []string{
		"America/New_York", "Europe/Berlin", "Europe/London", "Europe/Dublin", "Australia/Lord_Howe",
		"Antarctica/Troll", "America/Havana", "America/Santiago", "America/Sao_Paulo", "Asia/Tehran",
		"Africa/Casablanca", "Pacific/Apia", "Pacific/Kiritimati", "America/Sitka", "Asia/Manila",
		"Europe/Moscow", "Pacific/Chatham", "America/St_Johns", "Asia/Kolkata", "Australia/Sydney",
		"America/Danmarkshavn",
	} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			panic(err)
		}
		locs = append(locs, loc)
	}
	return locs
}()

// wallLayouts are the local forms ParseSendAt reads besides RFC 3339.
var wallLayouts = []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"}

// FuzzParseSendAt checks ParseSendAt on any text in any zone, and on
// local times next to the zone's clock changes (made from zone, year, nth
// and delta): it never panics; it returns an error (naming the input and
// with a zero time) or a time; RFC 3339 is read as written, offset
// included, and reads back the same; a local "YYYY-MM-DD HH:MM[:SS]" is
// the instant with that wall clock in the zone, the first one when the
// clocks repeat it, and the moment right after the jump when they skip
// it. The expected instant is found by walking the zone's periods, not
// with the code under test.
func FuzzParseSendAt(f *testing.F) {
	for _, s := range []struct {
		in          string
		zone        uint8
		year        uint16
		nth         uint8
		deltaSecond int32
	}{
		{"2026-11-24T09:00:00+01:00", 4, 226, 0, -1800},
		{"2026-11-24T09:00:00.123456789Z", 3, 226, 1, 1800},
		{"2026-03-08 02:30", 3, 226, 0, 1800},
		{"2026-11-01 01:30", 3, 226, 1, 1800},
		{" 2026-10-25T02:30 ", 4, 226, 1, 3600},
		{"2026-10-04 02:15:30", 7, 226, 1, 60},
		{"2011-12-30 12:00", 14, 211, 2, 43200},
		{"1994-12-31 00:00", 15, 194, 0, 3600},
		{"1867-10-18 12:00", 16, 67, 0, -3600},
		{"2026-03-29 02:30:00.999", 4, 226, 0, 0},
		{"0000-01-01 00:00", 0, 0, 0, 0},
		{"9999-12-31T23:59:59+14:00", 19, 449, 7, 7200},
		{"2026-02-29 09:00", 3, 226, 3, -7200},
		{"2026-11-24T09:00:00+25:00", 3, 226, 0, 0},
		{"tomorrow at 9", 3, 226, 0, 0},
		{"", 0, 0, 0, 0},
	} {
		f.Add(s.in, s.zone, s.year, s.nth, s.deltaSecond)
	}
	f.Fuzz(func(t *testing.T, in string, zone uint8, year uint16, nth uint8, deltaSecond int32) {
		loc := fuzzZones[int(zone)%len(fuzzZones)]
		checkSendAt(t, in, loc)
		if near, ok := nearTransition(loc, 1800+int(year)%450, int(nth)%8, deltaSecond%(6*3600)); ok {
			checkSendAt(t, near.Format(wallLayouts[int(nth)/8%len(wallLayouts)]), loc)
		}
	})
}

// checkSendAt checks ParseSendAt(in, loc) against what in says.
func checkSendAt(t *testing.T, in string, loc *time.Location) {
	t.Helper()
	got, err := schedule.ParseSendAt(in, loc)
	s := strings.TrimSpace(in)
	if err != nil {
		if !got.IsZero() {
			t.Fatalf("ParseSendAt(%q) returned %v with its error %v", in, got, err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
			t.Fatalf("ParseSendAt(%q): the error %q does not quote the input", in, err)
		}
	}
	if ref, rerr := time.Parse(time.RFC3339, s); rerr == nil {
		if err != nil || !got.Equal(ref) || got.Format(time.RFC3339Nano) != ref.Format(time.RFC3339Nano) {
			t.Fatalf("ParseSendAt(%q) = %v, %v; want %v as written", in, got, err, ref)
		}
		back, err := schedule.ParseSendAt(got.Format(time.RFC3339Nano), time.UTC)
		if err != nil || !back.Equal(got) {
			t.Fatalf("%q does not read back: %v, %v", got.Format(time.RFC3339Nano), back, err)
		}
		return
	}
	for _, layout := range wallLayouts {
		w, werr := time.Parse(layout, s)
		if werr != nil {
			continue
		}
		// Fractions of a second (which time.Parse takes after the
		// seconds whatever the layout) are dropped.
		w = w.Truncate(time.Second)
		if err != nil {
			t.Fatalf("ParseSendAt(%q) failed on a local time: %v", in, err)
		}
		want, gap := wallInstant(w, loc)
		if !got.Equal(want) {
			t.Fatalf("ParseSendAt(%q) in %s = %s, want %s (in a gap: %t)",
				in, loc, got.In(loc).Format(time.RFC3339), want.In(loc).Format(time.RFC3339), gap)
		}
		if !gap && wallOf(got, loc) != w {
			t.Fatalf("ParseSendAt(%q) in %s = %s: not the wall clock asked for", in, loc, got.In(loc))
		}
		return
	}
	if err == nil {
		t.Fatalf("ParseSendAt(%q) = %v: it is neither RFC 3339 nor a local time", in, got)
	}
}

// wallOf is t's wall clock in loc, as a time in UTC for comparing.
func wallOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}

// wallInstant finds the first instant whose wall clock in loc is w (a
// wall clock as a UTC time); gap is true when there is none, and the
// instant is then the end of the gap. It reads only loc's offsets, sampled
// every quarter of an hour within a day of w (no offset is a day or more,
// and no two clock changes are that close), not its zone bounds: Go's
// ZoneBounds ends periods at the end of a year under a zone's TZ rule.
func wallInstant(w time.Time, loc *time.Location) (at time.Time, gap bool) {
	offset := func(u time.Time) int { _, off := u.In(loc).Zone(); return off }
	var samples []time.Time
	seen := map[int]bool{}
	var offs []int
	for u := w.Add(-26 * time.Hour); !u.After(w.Add(26 * time.Hour)); u = u.Add(15 * time.Minute) {
		samples = append(samples, u)
		if off := offset(u); !seen[off] {
			seen[off] = true
			offs = append(offs, off)
		}
	}
	// Every instant with wall clock w is w less an offset in force then.
	found := false
	for _, off := range offs {
		u := w.Add(-time.Duration(off) * time.Second)
		if offset(u) == off && (!found || u.Before(at)) {
			at, found = u, true
		}
	}
	if found {
		return at, false
	}
	// Skipped: the clocks jumped over w between two samples.
	for i := 1; i < len(samples); i++ {
		lo, hi := samples[i-1], samples[i]
		if !wallOf(lo, loc).Before(w) || !wallOf(hi, loc).After(w) {
			continue
		}
		for hi.Sub(lo) > time.Second {
			mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
			if offset(mid) == offset(lo) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi, true
	}
	panic(fmt.Sprintf("no instant of %s is at or after %s", loc, w))
}

// nearTransition is the wall clock (as a UTC time) delta seconds after the
// last tick before the nth clock change of loc from the start of year; ok is
// false when loc has no such change.
func nearTransition(loc *time.Location, year, nth int, delta int32) (time.Time, bool) {
	p := time.Date(year, 1, 1, 0, 0, 0, 0, loc)
	var change time.Time
	for range nth + 1 {
		_, end := p.ZoneBounds()
		if end.IsZero() || end.Year() > year+1 {
			return time.Time{}, false
		}
		change, p = end, end
	}
	return wallOf(change.Add(-time.Second), loc).Add(time.Duration(delta) * time.Second), true
}
