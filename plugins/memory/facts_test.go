package memory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// The fact store's cases run on SQLite and, when storetest.PostgresEnv is
// set, on PostgreSQL: the plugin's queries must mean the same on each.

// factBundle is what a case works with.
type factBundle struct {
	t     *testing.T
	st    *store.Store
	facts *memory.FactStore
}

func onBothDatabases(t *testing.T, f func(b *factBundle)) {
	t.Helper()
	for name, open := range map[string]func(testing.TB) *store.Store{
		"SQLite": storetest.OpenSQLite, "Postgres": storetest.OpenPostgres,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			require.NoError(t, st.Migrate(t.Context(), memory.New()))
			f(&factBundle{t: t, st: st, facts: memory.NewFactStore(st.Database())})
		})
	}
}

// inbound records a user message on thread at at, planning no run.
func (b *factBundle) inbound(thread, text string, at time.Time) core.Conversation {
	b.t.Helper()
	res, err := b.st.RecordInbound(b.t.Context(), core.InboundRecord{Platform: telegram, ChannelThreadID: thread, Text: text, Now: at})
	require.NoError(b.t, err)
	return res.Conversation
}

func TestFactsScopedToConversation(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t := b.t.Context(), b.t
		a, c := b.inbound("a", "hi", t0), b.inbound("c", "hi", t0)
		require.NoError(t, b.facts.Add(ctx, &core.Fact{ConversationID: a.ID, Key: "F02", Content: "has a cat"}))
		require.NoError(t, b.facts.Add(ctx, &core.Fact{ConversationID: a.ID, Key: "F01", Content: "likes tea"}))
		require.NoError(t, b.facts.Add(ctx, &core.Fact{ConversationID: c.ID, Key: "F01", Content: "secret of c"}))
		require.Error(t, b.facts.Add(ctx, &core.Fact{ConversationID: a.ID, Key: "F01", Content: "dup"}), "keys are unique per conversation")
		got, err := b.facts.Facts(ctx, a.ID)
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, []string{"likes tea", "has a cat"}, []string{got[0].Content, got[1].Content})
	})
}

// A bot's fact engine reads its own bot's conversations only.
func TestFactWorkScopedToBot(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t := b.t.Context(), b.t
		mine := b.inbound("a", "hi", t0)
		other, err := b.st.ForBot("other").RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "a",
			Text: "not for the default bot's model", Now: t0})
		require.NoError(t, err)
		work, err := b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []memory.FactWork{{ConversationID: mine.ID, FromSeq: 0, ToSeq: 1}}, work)
		work, err = memory.NewFactStore(b.st.ForBot("other").Database()).ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []memory.FactWork{{ConversationID: other.Conversation.ID, FromSeq: 0, ToSeq: 1}}, work)
	})
}

func TestRememberAndForgetFacts(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t := b.t.Context(), b.t
		conv := b.inbound("a", "hi", t0)
		for i, f := range []string{"one", "two", "three"} {
			got, evicted, err := b.facts.Remember(ctx, conv.ID, f, 3, t0.Add(time.Duration(i)*time.Minute))
			require.NoError(t, err)
			require.Empty(t, evicted)
			require.Equal(t, []string{"F01", "F02", "F03"}[i], got.Key)
		}
		require.NoError(t, b.facts.Touch(ctx, conv.ID, []string{"F01"}, t0.Add(time.Hour)))
		got, evicted, err := b.facts.Remember(ctx, conv.ID, "four", 3, t0.Add(2*time.Hour))
		require.NoError(t, err)
		require.Equal(t, "F04", got.Key)
		require.Equal(t, []string{"F02"}, evicted, "the least recently used")
		require.NoError(t, b.facts.Update(ctx, conv.ID, "F03", "three, updated", t0.Add(3*time.Hour)))
		require.ErrorIs(t, b.facts.Update(ctx, conv.ID, "F02", "gone", t0.Add(3*time.Hour)), core.ErrNotFound)
		f, err := b.facts.Forget(ctx, conv.ID, "F01")
		require.NoError(t, err)
		require.Equal(t, "one", f.Content)
		_, err = b.facts.Forget(ctx, conv.ID, "F01")
		require.ErrorIs(t, err, core.ErrNotFound)
		other := b.inbound("b", "hi", t0)
		_, err = b.facts.Forget(ctx, other.ID, "F03")
		require.ErrorIs(t, err, core.ErrNotFound, "another conversation's fact is out of reach")
		facts, err := b.facts.Facts(ctx, conv.ID)
		require.NoError(t, err)
		require.Equal(t, []string{"three, updated", "four"}, []string{facts[0].Content, facts[1].Content})
	})
}

func TestClaimFactWork(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t := b.t.Context(), b.t
		a := b.inbound("a", "one", t0)
		b.inbound("a", "two", t0.Add(time.Second))
		c := b.inbound("c", "hello", t0)
		work, err := b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.ElementsMatch(t, []memory.FactWork{{ConversationID: a.ID, FromSeq: 0, ToSeq: 2}, {ConversationID: c.ID, FromSeq: 0, ToSeq: 1}}, work)
		work, err = b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, work, "claimed work is not handed out twice")

		b.inbound("a", "three", t0.Add(2*time.Second))
		work, err = b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []memory.FactWork{{ConversationID: a.ID, FromSeq: 2, ToSeq: 3}}, work)
		msgs, err := b.st.MessagesBetween(ctx, a.ID, work[0].FromSeq, work[0].ToSeq, 10)
		require.NoError(t, err)
		require.Len(t, msgs, 1)
		require.Equal(t, "three", msgs[0].Content)
		require.NoError(t, b.facts.ReleaseWork(ctx, work[0]))
		again, err := b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, work, again, "released work comes back")
	})
}

func TestForgetAllFacts(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t := b.t.Context(), b.t
		a := b.inbound("a", "I have a cat", t0)
		other := b.inbound("b", "I have a dog", t0)
		for _, f := range []string{"has a cat", "likes jazz"} {
			_, _, err := b.facts.Remember(ctx, a.ID, f, 30, t0)
			require.NoError(t, err)
		}
		_, _, err := b.facts.Remember(ctx, other.ID, "has a dog", 30, t0)
		require.NoError(t, err)
		b.inbound("a", "my cat is called Mochi", t0.Add(time.Second))

		n, err := b.facts.ForgetAllFacts(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		facts, err := b.facts.Facts(ctx, a.ID)
		require.NoError(t, err)
		require.Empty(t, facts)
		facts, err = b.facts.Facts(ctx, other.ID)
		require.NoError(t, err)
		require.Len(t, facts, 1, "another conversation's facts stay")

		// What was said before is not read for facts again; what follows is.
		work, err := b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []memory.FactWork{{ConversationID: other.ID, FromSeq: 0, ToSeq: 1}}, work)
		b.inbound("a", "I moved to Lyon", t0.Add(time.Minute))
		work, err = b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []memory.FactWork{{ConversationID: a.ID, FromSeq: 2, ToSeq: 3, Epoch: 1}}, work, "claimed after one forgetting")

		n, err = b.facts.ForgetAllFacts(ctx, a.ID)
		require.NoError(t, err)
		require.Zero(t, n)
	})
}

// Deleting a conversation takes its facts: their foreign key cascades.
func TestFactsGoWithTheirConversation(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t := b.t.Context(), b.t
		gone, kept := b.inbound("gone", "I bake bread on Sundays", t0), b.inbound("kept", "hi", t0)
		for _, c := range []core.Conversation{gone, kept} {
			require.NoError(t, b.facts.Add(ctx, &core.Fact{ConversationID: c.ID, Key: "F01", Content: "bakes bread", CreatedAt: t0}))
		}
		d, err := b.st.DeleteConversation(ctx, gone.ID, true)
		require.NoError(t, err)
		require.True(t, d.Deleted)
		var n int64
		require.NoError(t, b.st.DB().Raw(`SELECT COUNT(*) FROM facts WHERE conversation_id = ?`, gone.ID).Row().Scan(&n))
		require.Zero(t, n)
		facts, err := b.facts.Facts(ctx, kept.ID)
		require.NoError(t, err)
		require.Len(t, facts, 1, "another conversation's facts stay")
	})
}

// The plugin's migration changes nothing on a database whose store made
// facts and facts_seq (every database so far), makes the same where they
// are missing, and runs once.
func TestMigrations(t *testing.T) {
	t.Parallel()
	onBothDatabases(t, func(b *factBundle) {
		ctx, t, db := b.t.Context(), b.t, b.st.DB()
		conv := b.inbound("a", "hi", t0)
		_, _, err := b.facts.Remember(ctx, conv.ID, "likes tea", 30, t0)
		require.NoError(t, err)
		_, err = b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.NoError(t, b.st.Migrate(ctx, memory.New()), "a second migrate is a no-op")
		kept, err := b.facts.Facts(ctx, conv.ID)
		require.NoError(t, err)
		require.Len(t, kept, 1)
		var seq, n int64
		require.NoError(t, db.Raw(`SELECT facts_seq FROM conversations WHERE id = ?`, conv.ID).Row().Scan(&seq))
		require.Equal(t, int64(1), seq, "the engine's progress is kept")
		require.NoError(t, db.Raw(`SELECT COUNT(*) FROM plugin_migrations WHERE plugin = 'memory'`).Row().Scan(&n))
		require.Equal(t, int64(len(memory.New().Migrations())), n, "each migration is recorded once")

		// Made by the plugin alone, the table and the column are the ones
		// the store made.
		facts, convs := storetest.TableSchema(t, b.st, "facts"), storetest.TableSchema(t, b.st, "conversations")
		require.NoError(t, db.Exec(`DROP TABLE facts`).Error)
		require.NoError(t, db.Exec(`ALTER TABLE conversations DROP COLUMN facts_seq`).Error)
		require.NotEqual(t, convs, storetest.TableSchema(t, b.st, "conversations"))
		require.NoError(t, db.Exec(`DELETE FROM plugin_migrations WHERE plugin = 'memory'`).Error)
		require.NoError(t, b.st.Migrate(ctx, memory.New()))
		require.Equal(t, facts, storetest.TableSchema(t, b.st, "facts"))
		require.Equal(t, convs, storetest.TableSchema(t, b.st, "conversations"))
		_, _, err = b.facts.Remember(ctx, conv.ID, "likes coffee", 30, t0)
		require.NoError(t, err)
		work, err := b.facts.ClaimWork(ctx, 10)
		require.NoError(t, err)
		require.Equal(t, []memory.FactWork{{ConversationID: conv.ID, FromSeq: 0, ToSeq: 1}}, work, "the column is made afresh")
	})
}
