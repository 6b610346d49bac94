package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/recurrence"
)

func TestPlanOccurrence(t *testing.T) {
	t.Parallel()
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	require.NoError(t, err)
	daily, err := recurrence.Parse("0 9 * * *") // 01:00 UTC in Shanghai
	require.NoError(t, err)
	at := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05", s)
		require.NoError(t, err)
		return v
	}
	first := at("2026-11-24 01:00:00")
	job := func(catchUp core.CatchUp, due time.Time) core.Job {
		f := first
		return core.Job{DueAt: due, NextRunAt: &f, CatchUp: catchUp}
	}
	for _, tc := range []struct {
		name string
		job  core.Job
		now  string
		// run is the occurrence run ("" none); next the next occurrence.
		run, next, note string
		grace           time.Duration
	}{
		{"on time", job(core.CatchUpLatest, first), "2026-11-24 01:00:00", "2026-11-24 01:00:00", "2026-11-25 01:00:00", "", 0},
		{"a minute late is on time", job(core.CatchUpNone, first), "2026-11-24 01:01:00", "2026-11-24 01:00:00", "2026-11-25 01:00:00", "", 0},
		{"two hours down, latest: run late", job(core.CatchUpLatest, first), "2026-11-24 03:00:00", "2026-11-24 01:00:00", "2026-11-25 01:00:00", "", 0},
		{"two hours down, none: skip", job(core.CatchUpNone, first), "2026-11-24 03:00:00", "", "2026-11-25 01:00:00", "(catch_up: none)", 0},
		{"three days down: the latest only", job(core.CatchUpLatest, first), "2026-11-27 02:00:00", "2026-11-27 01:00:00", "2026-11-28 01:00:00",
			"missed the occurrences from 2026-11-24 09:00 CST while the bot was down; ran the latest, 2026-11-27 09:00 CST, late", 0},
		{"beyond late_grace: nothing", job(core.CatchUpLatest, first), "2026-11-24 03:00:00", "", "2026-11-25 01:00:00", "older than late_grace (1h0m0s)", time.Hour},
		{"down but back right at an occurrence, none: it is on time", job(core.CatchUpNone, first), "2026-11-26 01:00:30", "2026-11-26 01:00:00", "2026-11-27 01:00:00",
			"ran the latest, 2026-11-26 09:00 CST, on time", 0},
		{"waited behind a queued turn: not late", job(core.CatchUpNone, at("2026-11-24 01:05:00")), "2026-11-24 01:05:10", "2026-11-24 01:00:00", "2026-11-25 01:00:00", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grace := tc.grace
			if grace == 0 {
				grace = 24 * time.Hour
			}
			c, err := planOccurrence(daily, tc.job, at(tc.now), shanghai, grace)
			require.NoError(t, err)
			if tc.run == "" {
				require.Nil(t, c.Occurrence)
			} else {
				require.NotNil(t, c.Occurrence)
				require.Equal(t, tc.run, c.Occurrence.UTC().Format(time.DateTime))
			}
			require.Equal(t, tc.next, c.Next.UTC().Format(time.DateTime))
			if tc.note == "" {
				require.Empty(t, c.Note)
			} else {
				require.Contains(t, c.Note, tc.note)
			}
		})
	}
}
