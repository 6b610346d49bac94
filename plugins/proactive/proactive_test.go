package proactive_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/proactive"
)

func quiet(t *testing.T, start, end string) *proactive.Plugin {
	t.Helper()
	p := proactive.New()
	p.QuietHours = proactive.QuietHours{Start: start, End: end}
	require.NoError(t, p.Provision(context.Background(), core.Env{}))
	require.NoError(t, p.Validate())
	return p
}

func TestQuietHoursMoveAFollowUpToTheirEnd(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	at := func(loc *time.Location, s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		require.NoError(t, err)
		return v
	}
	night := quiet(t, "23:00", "08:00")
	lunch := quiet(t, "12:30", "13:30")
	for _, tc := range []struct {
		name      string
		p         *proactive.Plugin
		loc       *time.Location
		due, want string
	}{
		{"before the window", night, berlin, "2026-11-23 22:59", "2026-11-23 22:59"},
		{"at its start", night, berlin, "2026-11-23 23:00", "2026-11-24 08:00"},
		{"before midnight", night, berlin, "2026-11-23 23:30", "2026-11-24 08:00"},
		{"after midnight", night, berlin, "2026-11-24 03:15", "2026-11-24 08:00"},
		{"at its end", night, berlin, "2026-11-24 08:00", "2026-11-24 08:00"},
		{"in the user's own zone", night, tokyo, "2026-11-24 07:59", "2026-11-24 08:00"},
		{"a window within a day", lunch, berlin, "2026-11-23 12:45", "2026-11-23 13:30"},
		{"outside it", lunch, berlin, "2026-11-23 13:31", "2026-11-23 13:31"},
		// Berlin falls back on 25 October 2026 (03:00 CEST -> 02:00 CET)
		// and springs forward on 29 March 2026 (02:00 -> 03:00).
		{"across the fall-back night", night, berlin, "2026-10-25 01:30", "2026-10-25 08:00"},
		{"across the spring-forward night", night, berlin, "2026-03-29 01:30", "2026-03-29 08:00"},
	} {
		got := tc.p.ProactiveDue(core.Conversation{}, tc.loc, at(tc.loc, tc.due))
		require.Equal(t, tc.want, got.In(tc.loc).Format("2006-01-02 15:04"), tc.name)
	}
	// The fall-back night has an hour more: 01:30 to 08:00 is 7½ hours.
	got := night.ProactiveDue(core.Conversation{}, berlin, at(berlin, "2026-10-25 01:30"))
	require.Equal(t, 7*time.Hour+30*time.Minute, got.Sub(at(berlin, "2026-10-25 01:30")))
}

func TestNoQuietHoursByDefault(t *testing.T) {
	t.Parallel()
	p := proactive.New()
	require.NoError(t, p.Validate())
	due := time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC)
	require.Equal(t, due, p.ProactiveDue(core.Conversation{}, time.UTC, due))
}

func TestQuietHoursValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ start, end, want string }{
		{"23:00", "", "quiet_hours.end: want HH:MM (24-hour)"},
		{"11pm", "08:00", `quiet_hours.start: want HH:MM (24-hour), got "11pm"`},
		{"08:00", "08:00", "give a window"},
		{"24:00", "08:00", "quiet_hours.start"},
	} {
		p := proactive.New()
		p.QuietHours = proactive.QuietHours{Start: tc.start, End: tc.end}
		require.ErrorContains(t, p.Validate(), tc.want, tc.start+"-"+tc.end)
	}
}

func TestNudgeCarriesTheReason(t *testing.T) {
	t.Parallel()
	p := proactive.New()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	n := p.ProactiveNudge(&core.Turn{Now: now, Location: time.UTC,
		Job: &core.Job{Text: "check on the bread", CreatedAt: now.Add(-3 * time.Hour)}})
	require.Contains(t, n, "~3 hours ago you planned to write to them first, because: check on the bread.")
	require.Contains(t, n, "It is now Monday 10:00 for them.")
	require.Contains(t, n, core.SilenceToken)
}
