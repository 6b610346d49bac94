package intake

import (
	"testing"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/stretchr/testify/require"
)

func TestLiftTimeInTheUsersZone(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	now := time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC) // 10:00 in Berlin
	for _, c := range []struct {
		until time.Time
		want  string
	}{
		{now.Add(4*time.Hour + 5*time.Minute), "14:05 (Europe/Berlin time)"},
		{now.Add(4*time.Hour + 5*time.Minute + time.Second), "14:06 (Europe/Berlin time)"},
		{now.Add(4*time.Hour + 5*time.Minute + time.Microsecond), "14:06 (Europe/Berlin time)"},
		{now.Add(14 * time.Hour), "00:00 tomorrow (Europe/Berlin time)"},
		{now.Add(13*time.Hour + 59*time.Minute + 30*time.Second), "00:00 tomorrow (Europe/Berlin time)"},
		{now.Add(24 * time.Hour), "10:00 tomorrow (Europe/Berlin time)"},
		{now.Add(38 * time.Hour), "00:00 on Thu 17 Jan (Europe/Berlin time)"},
	} {
		require.Equal(t, c.want, liftTime(c.until, now, berlin), "until %v", c.until)
	}
	require.Equal(t, "09:30 (UTC time)", liftTime(now.Add(30*time.Minute), now, time.UTC))
}

func TestTokensLiftWhenEnoughHasAgedOut(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return now.Add(time.Duration(-h) * time.Hour) }
	spends := []core.TokenSpend{{At: at(20), Tokens: 600}, {At: at(10), Tokens: 300}, {At: at(5), Tokens: 200}} // 1,100
	require.Equal(t, at(20).Add(core.DayLimitWindow), tokensLiftFrom(spends, 1000, now), "without the oldest: 500")
	require.Equal(t, at(10).Add(core.DayLimitWindow), tokensLiftFrom(spends, 300, now), "200 left after the two oldest")
	require.Equal(t, at(5).Add(core.DayLimitWindow), tokensLiftFrom(spends, 100, now), "only when all have gone")
	require.Equal(t, now, tokensLiftFrom(spends, 2000, now), "under the limit already")
	require.Equal(t, now, tokensLiftFrom(nil, 1, now))
}

func TestLimitNoticesAreShort(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)
	for _, h := range []limitHit{
		{limit: core.LimitMessagesPerMinute, max: 1, until: now.Add(time.Minute)},
		{limit: core.LimitTurnsPerDay, max: 1, until: now.Add(time.Hour)},
		{limit: core.LimitTokensPerDay, max: 100000, until: now.Add(time.Hour)},
	} {
		text := limitNoticeText(h, now, time.UTC)
		require.Less(t, len(text), 160, text)
		require.NotContains(t, text, "1 messages")
		require.NotContains(t, text, "1 replies")
	}
	require.Contains(t, limitNoticeText(limitHit{limit: core.LimitTurnsPerDay, max: 1, until: now.Add(time.Hour)}, now, time.UTC),
		"the limit of 1 reply in 24 hours. I'll answer again after 10:00 (UTC time).")
}

func TestNoticeInForce(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)
	until, ok := noticeInForce(map[string]any{"limit_until": "2030-01-15T09:00:00.5Z"}, now)
	require.True(t, ok)
	require.Equal(t, now.Add(500*time.Millisecond), until)
	for _, meta := range []map[string]any{nil, {}, {"limit_until": "2030-01-15T09:00:00Z"}, {"limit_until": "soon"}, {"limit_until": 7}} {
		_, ok := noticeInForce(meta, now)
		require.False(t, ok, "%v", meta)
	}
}
