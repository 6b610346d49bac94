package recurrence_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/recurrence"
)

// occurrences lists n occurrences of schedule after from, in UTC.
func occurrences(t *testing.T, schedule string, from time.Time, loc *time.Location, n int) []string {
	t.Helper()
	s, err := recurrence.Parse(schedule)
	require.NoError(t, err)
	var out []string
	at := from
	for range n {
		at, err = s.Next(at, loc)
		require.NoError(t, err)
		out = append(out, at.UTC().Format("2006-01-02 15:04"))
	}
	return out
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	require.NoError(t, err)
	return l
}

func TestDailyInShanghaiIsOneUTC(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	require.Equal(t, []string{"2026-11-23 01:00", "2026-11-24 01:00", "2026-11-25 01:00"},
		occurrences(t, "0 9 * * *", from, zone(t, "Asia/Shanghai"), 3))
}

// The DST tables: New York springs forward on 2026-03-08 (02:00 EST →
// 03:00 EDT, at 07:00 UTC) and falls back on 2026-11-01 (02:00 EDT →
// 01:00 EST, at 06:00 UTC); Berlin on 2026-03-29 (02:00 CET → 03:00
// CEST, at 01:00 UTC) and 2026-10-25 (03:00 CEST → 02:00 CET, at 01:00 UTC).
func TestDSTTables(t *testing.T) {
	t.Parallel()
	ny, berlin := zone(t, "America/New_York"), zone(t, "Europe/Berlin")
	for _, tc := range []struct {
		name     string
		schedule string
		loc      *time.Location
		from     time.Time
		want     []string
	}{
		{"NY: a daily time in the spring gap runs right after the jump", "30 2 * * *", ny,
			time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC),
			[]string{"2026-03-07 07:30", "2026-03-08 07:00", "2026-03-09 06:30"}},
		{"NY: two gap times run once, at the jump", "0,30 2 * * *", ny,
			time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC),
			[]string{"2026-03-08 07:00", "2026-03-09 06:00", "2026-03-09 06:30"}},
		{"NY: a daily time in the repeated hour runs once", "30 1 * * *", ny,
			time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC),
			[]string{"2026-10-31 05:30", "2026-11-01 05:30", "2026-11-02 06:30"}},
		{"NY: hourly across the fall back: the wall hour 01:00 once", "0 * * * *", ny,
			time.Date(2026, 11, 1, 3, 30, 0, 0, time.UTC),
			[]string{"2026-11-01 04:00", "2026-11-01 05:00", "2026-11-01 07:00", "2026-11-01 08:00"}},
		{"NY: hourly across the spring forward: no 02:00", "0 * * * *", ny,
			time.Date(2026, 3, 8, 5, 30, 0, 0, time.UTC),
			[]string{"2026-03-08 06:00", "2026-03-08 07:00", "2026-03-08 08:00"}},
		{"NY: 09:00 keeps its wall time across both changes", "0 9 * * *", ny,
			time.Date(2026, 3, 7, 15, 0, 0, 0, time.UTC),
			[]string{"2026-03-08 13:00", "2026-03-09 13:00"}},
		{"Berlin: a daily time in the spring gap runs right after the jump", "30 2 * * *", berlin,
			time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC),
			[]string{"2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"}},
		{"Berlin: a daily time in the repeated hour runs once", "30 2 * * *", berlin,
			time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC),
			[]string{"2026-10-24 00:30", "2026-10-25 00:30", "2026-10-26 01:30"}},
		{"Berlin: every 15 minutes through the repeated hour", "*/15 2 * * *", berlin,
			time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC),
			[]string{"2026-10-25 00:15", "2026-10-25 00:30", "2026-10-25 00:45", "2026-10-26 01:00"}},
		{"Berlin: weekdays at 08:00", "0 8 * * 1-5", berlin,
			time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), // a Friday
			[]string{"2026-11-30 07:00", "2026-12-01 07:00"}},
		{"an interval is a real duration", "every 2h", ny,
			time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC),
			[]string{"2026-11-01 06:00", "2026-11-01 08:00"}},
		{"a descriptor", "@daily", berlin,
			time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC),
			[]string{"2026-11-23 23:00", "2026-11-24 23:00"}},
	} {
		require.Equal(t, tc.want, occurrences(t, tc.schedule, tc.from, tc.loc, len(tc.want)), tc.name)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		"every 10s":   "at least 1m0s",
		"every often": "not a duration",
		"0 9 * *":     "not a 5-field cron expression",
		"0 0 9 * * *": "not a 5-field cron expression",
		"61 * * * *":  "not a 5-field cron expression",
		"@every 1h":   `write an interval as "every 2h"`,
		"":            "not a 5-field cron expression",
	} {
		_, err := recurrence.Parse(s)
		require.ErrorContains(t, err, want, s)
	}
	s, err := recurrence.Parse("0 0 30 2 *")
	require.NoError(t, err)
	_, err = s.Next(time.Now(), time.UTC)
	require.ErrorIs(t, err, recurrence.ErrNever)
}

func TestLatestIsTheOneOccurrenceToCatchUpOn(t *testing.T) {
	t.Parallel()
	shanghai, ny := zone(t, "Asia/Shanghai"), zone(t, "America/New_York")
	utc := func(s string) time.Time {
		at, err := time.Parse("2006-01-02 15:04", s)
		require.NoError(t, err)
		return at
	}
	for _, tc := range []struct {
		name, schedule string
		loc            *time.Location
		first, now     string
		want           string
	}{
		{"three days down, daily 09:00 Shanghai", "0 9 * * *", shanghai, "2026-11-23 01:00", "2026-11-26 03:00", "2026-11-26 01:00"},
		{"down just before the next one", "0 9 * * *", shanghai, "2026-11-23 01:00", "2026-11-26 00:59", "2026-11-25 01:00"},
		{"nothing newer than first", "0 9 * * *", shanghai, "2026-11-23 01:00", "2026-11-23 05:00", "2026-11-23 01:00"},
		{"now before first", "0 9 * * *", shanghai, "2026-11-23 01:00", "2026-11-22 05:00", "2026-11-23 01:00"},
		{"exactly at an occurrence", "0 9 * * *", shanghai, "2026-11-23 01:00", "2026-11-25 01:00", "2026-11-25 01:00"},
		{"intervals count on from first", "every 2h", shanghai, "2026-11-23 01:10", "2026-11-26 03:00", "2026-11-26 01:10"},
		{"the spring gap: 02:30 ran at the jump", "30 2 * * *", ny, "2026-03-07 07:30", "2026-03-08 08:00", "2026-03-08 07:00"},
		{"a weekly job, a month down", "0 18 * * 5", time.UTC, "2026-11-06 18:00", "2026-12-09 12:00", "2026-12-04 18:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := recurrence.Parse(tc.schedule)
			require.NoError(t, err)
			got := s.Latest(utc(tc.first), utc(tc.now), tc.loc)
			require.Equal(t, tc.want, got.UTC().Format("2006-01-02 15:04"))
		})
	}
}
