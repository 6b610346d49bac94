package memory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/memory"
)

var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

func TestActiveDays(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	rec := func(start time.Time, d time.Duration) core.SessionRecord {
		end := start.Add(d)
		return core.SessionRecord{StartedAt: start, EndedAt: &end}
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, berlin) // Monday
	recs := []core.SessionRecord{
		rec(now.AddDate(0, 0, -40), time.Hour),                    // too old
		rec(now.AddDate(0, 0, -29), time.Hour),                    // in the 30
		rec(now.AddDate(0, 0, -10), time.Hour),                    // in the 30
		rec(now.AddDate(0, 0, -6), time.Hour),                     // the 7th day back
		rec(now.AddDate(0, 0, -3).Add(11*time.Hour), 2*time.Hour), // 23:00 to 01:00: two days
		rec(now.AddDate(0, 0, -3), time.Hour),                     // same day again
		{StartedAt: now.Add(-time.Hour)},                          // open, today
	}
	week, month := memory.ActiveDays(recs, now, berlin)
	require.Equal(t, 4, week, "days -6, -3, -2 and today")
	require.Equal(t, 6, month)
	// 23:30 UTC on Sunday is already Monday in Berlin.
	late := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC)
	w, _ := memory.ActiveDays([]core.SessionRecord{{StartedAt: late}}, late, berlin)
	require.Equal(t, 1, w)
}

func TestLayersHoldOnlyThisUsersMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, st, p := b.ctx, b.st, b.p
	var convs []core.Conversation
	for _, u := range []string{"ann", "bob"} {
		res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: u,
			DisplayName: u, Text: "hi", Now: t0.Add(-48 * time.Hour), SessionGap: 10 * time.Minute})
		require.NoError(t, err)
		require.NoError(t, b.facts.Add(ctx, &core.Fact{ConversationID: res.Conversation.ID, Key: "F01", Content: "secret of " + u}))
		require.NoError(t, st.DB().Exec(`UPDATE session_records SET summary = ? WHERE id = ?`, "summary of "+u, *res.Conversation.CurrentRecordID).Error)
		res, err = st.RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: u,
			Text: "again", Now: t0, SessionGap: 10 * time.Minute})
		require.NoError(t, err)
		convs = append(convs, res.Conversation)
	}
	for i, conv := range convs {
		rec, err := st.SessionRecord(ctx, *conv.CurrentRecordID)
		require.NoError(t, err)
		layers, err := p.PromptLayers(ctx, &core.Turn{Conversation: conv, Record: rec, Now: t0, Location: time.UTC})
		require.NoError(t, err)
		var all string
		for _, l := range layers {
			all += l.Text + "\n"
		}
		me, other := []string{"ann", "bob"}[i], []string{"bob", "ann"}[i]
		require.Contains(t, all, "[F01] secret of "+me)
		require.Contains(t, all, "summary of "+me)
		require.Contains(t, all, "You are talking with "+me+" on Telegram.")
		require.Contains(t, all, "Your previous session ended ~2 days before this one.")
		require.NotContains(t, all, other, "another user's memory leaked")
	}
}

// The session layer names the platform as the turn's adapter does; a
// platform whose adapter gives no title (or a turn built without one) is
// named by its name, capitalised.
func TestSessionLayerNamesThePlatform(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		platform core.Platform
		title    string
		want     string
	}{
		{"web", "the web chat", "You are talking with ann on the web chat."},
		{"irc", "", "You are talking with ann on Irc."},
		{"irc", "IRC", "You are talking with ann on IRC."},
	} {
		res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: tc.platform, ChannelThreadID: "ann",
			DisplayName: "ann", Text: "hi", Now: t0, SessionGap: 10 * time.Minute})
		require.NoError(t, err)
		layers, err := b.p.PromptLayers(b.ctx, &core.Turn{Conversation: res.Conversation, PlatformTitle: tc.title, Now: t0, Location: time.UTC})
		require.NoError(t, err)
		var all string
		for _, l := range layers {
			all += l.Text + "\n"
		}
		require.Contains(t, all, tc.want)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	p := memory.New()
	require.NoError(t, p.Validate())
	p.MaxFacts, p.SessionGap, p.WindowMessages, p.WindowTokens = 0, time.Second, 1, 10
	err := p.Validate()
	for _, want := range []string{"max_facts must be 1 to 200", "session_gap must be at least 1m", "window_messages must be 2 to 1000", "window_tokens must be at least 500"} {
		require.ErrorContains(t, err, want)
	}
}
