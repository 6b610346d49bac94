// Package words is how the console puts times, spans and texts into
// words: "3 min ago", a conversation's zone, a recurrence's next times.
package words

import (
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/core/recurrence"
)

// Zone is a conversation's zone, or def when it has none or names one
// that is not known.
func Zone(name string, def *time.Location) *time.Location {
	if name == "" {
		return def
	}
	if l, err := time.LoadLocation(name); err == nil {
		return l
	}
	return def
}

// Shorten cuts s to n runes on one line, with an ellipsis when cut.
func Shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Ago says how long before now t was, roughly: "3 min ago".
func Ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < 0:
		return "in " + Roughly(-d)
	case d < time.Minute:
		return "just now"
	default:
		return Roughly(d) + " ago"
	}
}

// Roughly is d to the nearest unit that matters: "45 s", "3 min", "2 h",
// "4 days".
func Roughly(d time.Duration) string {
	in := func(unit time.Duration) int64 { return int64(d.Round(unit) / unit) }
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", in(time.Second))
	case d < time.Hour-30*time.Second:
		return fmt.Sprintf("%d min", in(time.Minute))
	case d < 47*time.Hour+30*time.Minute:
		return fmt.Sprintf("%d h", in(time.Hour))
	default:
		return fmt.Sprintf("%d days", in(24*time.Hour))
	}
}

// SameZone reports whether a and b show t the same way.
func SameZone(a, b *time.Location, t time.Time) bool {
	if a.String() == b.String() {
		return true
	}
	an, ao := t.In(a).Zone()
	bn, bo := t.In(b).Zone()
	return an == bn && ao == bo
}

// NextOccurrences are a recurrence's next n occurrences from first (the
// next one, included), in loc, written in layout; none when it does not parse.
func NextOccurrences(rec string, first time.Time, loc *time.Location, n int, layout string) []string {
	sched, err := recurrence.Parse(rec)
	if err != nil {
		return nil
	}
	out := []string{first.In(loc).Format(layout)}
	t := first
	for len(out) < n {
		next, err := sched.Next(t, loc)
		if err != nil {
			break
		}
		out = append(out, next.In(loc).Format(layout))
		t = next
	}
	return out
}
