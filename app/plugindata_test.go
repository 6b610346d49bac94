package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/plugins/mood"
	"github.com/parleybot/parley/store/storetest"
)

// The console and /forget read the facts and moods the plugins keep
// without the plugins being provisioned, so whatever the config says of
// them: a user can still see and erase what was remembered while the
// memory plugin was on.
func TestPluginDataReadWithoutThePlugins(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := storetest.OpenSQLite(t)
	require.NoError(t, st.Migrate(ctx, pluginMigrators()...))
	db := st.Database()
	t0 := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	res, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "web", ChannelThreadID: "ada", Text: "hi", Now: t0})
	require.NoError(t, err)
	conv := res.Conversation
	_, _, err = memory.NewFactStore(db).Remember(ctx, conv.ID, "bakes bread", 30, t0)
	require.NoError(t, err)
	require.NoError(t, mood.NewPoints(db).Add(ctx, &core.MoodPoint{ConversationID: conv.ID, Valence: 0.4, Source: "set_mood", CreatedAt: t0}))

	facts := pluginFacts(db)
	require.NotNil(t, facts)
	got, err := facts.Facts(ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "bakes bread", got[0].Content)
	hist, err := pluginMood(db).MoodHistory(ctx, conv.ID, 10)
	require.NoError(t, err)
	require.Len(t, hist, 1)
	n, err := facts.ForgetAllFacts(ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
