package mood_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/mood"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// onBothDatabases runs f on a migrated SQLite store and, when
// storetest.PostgresEnv is set, on a PostgreSQL one: the plugin's queries
// must mean the same on each.
func onBothDatabases(t *testing.T, f func(t *testing.T, st *store.Store)) {
	t.Helper()
	for name, open := range map[string]func(testing.TB) *store.Store{
		"SQLite": storetest.OpenSQLite, "Postgres": storetest.OpenPostgres,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			require.NoError(t, st.Migrate(t.Context(), mood.New()))
			f(t, st)
		})
	}
}

// conversation records a message on thread and returns its conversation.
func conversation(t *testing.T, st *store.Store, thread string) core.Conversation {
	t.Helper()
	res, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: web, ChannelThreadID: thread, Text: "hi", Now: t0,
		SessionGap: 10 * time.Minute})
	require.NoError(t, err)
	return res.Conversation
}

func TestPointsHistory(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(t *testing.T, st *store.Store) {
		ctx, points := t.Context(), mood.NewPoints(st.Database())
		conv := conversation(t, st, "chat")
		_, err := points.Latest(ctx, conv.ID)
		require.ErrorIs(t, err, core.ErrNotFound)
		rec := *conv.CurrentRecordID
		for i, v := range []float64{0.1, 0.4, -0.2} {
			m := &core.MoodPoint{ConversationID: conv.ID, SessionRecordID: &rec, Valence: v, Arousal: -v, Source: "set_mood",
				Reason: "r", CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
			require.NoError(t, points.Add(ctx, m))
			require.NotZero(t, m.ID)
		}
		last, err := points.Latest(ctx, conv.ID)
		require.NoError(t, err)
		require.InDelta(t, -0.2, last.Valence, 1e-9)
		require.InDelta(t, 0.2, last.Arousal, 1e-9)
		require.Equal(t, rec, *last.SessionRecordID)
		require.True(t, last.CreatedAt.Equal(t0.Add(2*time.Minute)))
		hist, err := points.MoodHistory(ctx, conv.ID, 2)
		require.NoError(t, err)
		require.Len(t, hist, 2)
		require.InDelta(t, 0.4, hist[0].Valence, 1e-9, "oldest first")
		require.InDelta(t, -0.2, hist[1].Valence, 1e-9)

		require.NoError(t, points.Add(ctx, &core.MoodPoint{ConversationID: conv.ID, Valence: 0.5, Source: "set_mood",
			CreatedAt: t0.Add(time.Hour)}))
		last, err = points.Latest(ctx, conv.ID)
		require.NoError(t, err)
		require.Nil(t, last.SessionRecordID, "a point of no record")
	})
}

// Deleting a conversation takes its mood points: their foreign key
// cascades.
func TestPointsGoWithTheirConversation(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(t *testing.T, st *store.Store) {
		ctx, points := t.Context(), mood.NewPoints(st.Database())
		conv, kept := conversation(t, st, "gone"), conversation(t, st, "kept")
		for _, c := range []core.Conversation{conv, kept} {
			require.NoError(t, points.Add(ctx, &core.MoodPoint{ConversationID: c.ID, SessionRecordID: c.CurrentRecordID,
				Valence: 0.3, Source: "set_mood", CreatedAt: t0}))
		}
		d, err := st.DeleteConversation(ctx, conv.ID, true)
		require.NoError(t, err)
		require.True(t, d.Deleted)
		var n int64
		require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM mood_points WHERE conversation_id = ?`, conv.ID).Row().Scan(&n))
		require.Zero(t, n)
		hist, err := points.MoodHistory(ctx, kept.ID, 10)
		require.NoError(t, err)
		require.Len(t, hist, 1, "another conversation's mood stays")
	})
}

// The plugin's migration changes nothing on a database whose store made
// mood_points (every database so far), creates the same table where it is
// missing, and runs once.
func TestMigrations(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(t *testing.T, st *store.Store) {
		ctx, points := t.Context(), mood.NewPoints(st.Database())
		conv := conversation(t, st, "chat")
		require.NoError(t, points.Add(ctx, &core.MoodPoint{ConversationID: conv.ID, Valence: 0.3, Source: "set_mood", CreatedAt: t0}))
		require.NoError(t, st.Migrate(ctx, mood.New()), "a second migrate is a no-op")
		hist, err := points.MoodHistory(ctx, conv.ID, 10)
		require.NoError(t, err)
		require.Len(t, hist, 1)
		var n int64
		require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM plugin_migrations WHERE plugin = 'mood'`).Row().Scan(&n))
		require.Equal(t, int64(len(mood.New().Migrations())), n, "each migration is recorded once")

		// Made by the plugin alone, the table is the one the store made.
		before := storetest.TableSchema(t, st, "mood_points")
		require.NoError(t, st.DB().Exec(`DROP TABLE mood_points`).Error)
		require.NoError(t, st.DB().Exec(`DELETE FROM plugin_migrations WHERE plugin = 'mood'`).Error)
		require.NoError(t, st.Migrate(ctx, mood.New()))
		require.Equal(t, before, storetest.TableSchema(t, st, "mood_points"))
		require.NoError(t, points.Add(ctx, &core.MoodPoint{ConversationID: conv.ID, Valence: 0.1, Source: "set_mood", CreatedAt: t0}))
		hist, err = points.MoodHistory(ctx, conv.ID, 10)
		require.NoError(t, err)
		require.Len(t, hist, 1, "the table is made afresh")
	})
}
