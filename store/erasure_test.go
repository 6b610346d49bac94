package store_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// The words only one conversation holds: user A's (erased), user B's
// and A's with another bot (both kept).
const (
	markerA   = "zebracorn42"
	markerB   = "quokkaplum77"
	markerAda = "marmotfig19"
)

var t0 = time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC)

// TestEraseConversationSQLite erases user A's conversation and reads the
// database file and its WAL: A's word is nowhere in them, nor in the
// search index's terms; B's and A's with another bot are.
func TestEraseConversationSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "parley.db")
	st := openDSN(t, store.DriverSQLite, path)
	f := seedErasure(t, st)
	require.True(t, bytes.Contains(fileBytes(t, path), []byte(markerA)), "the files hold A's word before")
	require.Positive(t, indexTerms(t, st, markerA), "the index holds A's word before")
	f.erase(t)

	raw := fileBytes(t, path)
	require.False(t, bytes.Contains(raw, []byte(markerA)), "A's word is still in the database files")
	require.True(t, bytes.Contains(raw, []byte(markerB)), "B's word went too")
	require.True(t, bytes.Contains(raw, []byte(markerAda)), "the other bot's went too")
	require.Zero(t, indexTerms(t, st, markerA), "A's word is still a term of the search index")
	require.Positive(t, indexTerms(t, st, markerB))
}

// TestEraseRestoresSecureDelete: a DSN that turns secure_delete off
// keeps it off for the writes after an erasure, which turned it on.
func TestEraseRestoresSecureDelete(t *testing.T) {
	t.Parallel()
	st := openDSN(t, store.DriverSQLite, filepath.Join(t.TempDir(), "parley.db")+"?_secure_delete=off")
	require.NoError(t, st.Migrate(t.Context()))
	in, err := st.RecordInbound(t.Context(), core.InboundRecord{Platform: web, ChannelThreadID: "a", Text: "hi", Now: t0})
	require.NoError(t, err)
	_, err = st.EraseConversation(t.Context(), in.Conversation.ID, t0)
	require.NoError(t, err)
	var on int
	require.NoError(t, st.DB().WithContext(t.Context()).Raw(`PRAGMA secure_delete`).Row().Scan(&on))
	require.Zero(t, on)
}

// TestEraseConversationPostgres erases user A's conversation: no row of
// any table of the schema holds A's word (as text or as bytes) any more,
// B's and the other bot's rows do, and the tables were vacuumed.
func TestEraseConversationPostgres(t *testing.T) {
	t.Parallel()
	st := storetest.OpenPostgres(t)
	f := seedErasure(t, st)
	require.Positive(t, rowsHolding(t, st, markerA), "A's rows before")
	f.erase(t)

	require.Zero(t, rowsHolding(t, st, markerA), "a row still holds A's word")
	require.Positive(t, rowsHolding(t, st, markerB))
	require.Positive(t, rowsHolding(t, st, markerAda))
	for _, table := range []string{"conversations", "messages", "message_files", "embeddings"} {
		var vacuumed bool
		require.NoError(t, st.DB().WithContext(t.Context()).Raw(`SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = ?`, table).Row().Scan(&vacuumed))
		require.True(t, vacuumed, table)
	}
}

// erasureFixture is three conversations holding each everything a
// conversation can: user A's and B's with the default bot, and A's with
// ada.
type erasureFixture struct {
	st        *store.Store
	a, b, ada core.Conversation
	before    map[int64]map[string]int64 // rowsOf each conversation before
	erasedAt  time.Time
}

func seedErasure(t *testing.T, st *store.Store) *erasureFixture {
	t.Helper()
	require.NoError(t, st.Migrate(t.Context(), memory.New()))
	f := &erasureFixture{st: st, erasedAt: t0.Add(time.Hour)}
	// Each indexed on its own: the search index then has several
	// segments, as it would have, to merge.
	f.a = seedConversation(t, st, "a", markerA)
	f.b = seedConversation(t, st, "b", markerB)
	f.ada = seedConversation(t, st.ForBot("ada"), "a", markerAda)
	// A takes a word back, long before the erasure, while B writes: the
	// old text's cell, between B's, must not stay in the page's free
	// space when A's rows go (SQLite zeroes what it frees only under
	// secure_delete).
	taken := &core.Message{ConversationID: f.a.ID, Role: core.RoleUser, Source: core.SourceUser, Content: "oh, and " + markerA, CreatedAt: t0}
	require.NoError(t, st.AppendMessage(t.Context(), taken))
	require.NoError(t, st.AppendMessage(t.Context(), &core.Message{ConversationID: f.b.ID, Role: core.RoleUser,
		Source: core.SourceUser, Content: "and from me", CreatedAt: t0}))
	require.NoError(t, st.SetMessageText(t.Context(), core.Message{ID: taken.ID, Content: "no, forget what I told you just now"}))
	f.before = map[int64]map[string]int64{}
	for _, c := range []core.Conversation{f.a, f.b, f.ada} {
		f.before[c.ID] = rowsOf(t, st, c.ID)
	}
	return f
}

// erase erases A's conversation and checks the rows: A's all gone,
// counted; the others' all there; the erasure recorded.
func (f *erasureFixture) erase(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	_, err := f.st.ForBot("ada").EraseConversation(ctx, f.a.ID, f.erasedAt)
	require.ErrorIs(t, err, core.ErrNotFound, "ada's view erases only ada's")
	rows, err := f.st.EraseConversation(ctx, f.a.ID, f.erasedAt)
	require.NoError(t, err)
	var want int64
	for table, n := range f.before[f.a.ID] {
		require.Positive(t, n, "the fixture gives A's conversation a row of %s", table)
		want += n
	}
	require.Equal(t, want, rows, "every table's rows counted")
	for table, n := range rowsOf(t, f.st, f.a.ID) {
		require.Zero(t, n, table)
	}
	require.Equal(t, f.before[f.b.ID], rowsOf(t, f.st, f.b.ID), "B's rows")
	require.Equal(t, f.before[f.ada.ID], rowsOf(t, f.st, f.ada.ID), "A's with the other bot")

	erasures, err := f.st.Erasures(ctx, 10)
	require.NoError(t, err)
	require.Len(t, erasures, 1)
	require.Equal(t, store.Erasure{ID: erasures[0].ID, ConversationID: f.a.ID, Rows: want, BotID: store.DefaultBot, At: f.erasedAt}, erasures[0])
	found, err := f.st.SearchConversations(ctx, markerA, 10, 0)
	require.NoError(t, err)
	require.Empty(t, found)
	_, err = f.st.EraseConversation(ctx, f.a.ID, f.erasedAt)
	require.ErrorIs(t, err, core.ErrNotFound)
}

// seedConversation gives st's bot a conversation on thread of user 7
// whose every kind of row holds marker: messages, a file kept for a
// send, a question answered, a session record's summary and prompt, a
// run's record, a recurring job, a mood point, a fact, an embedding and
// an edit waiting to be embedded again.
func seedConversation(t *testing.T, st *store.Store, thread, marker string) core.Conversation {
	t.Helper()
	ctx, db := t.Context(), st.Database()
	in, err := st.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: thread, ChannelUserID: "user-7",
		DisplayName: "Ann", Text: "my secret word is " + marker, Now: t0, PlanRun: true})
	require.NoError(t, err)
	conv := in.Conversation
	reply := &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant, Source: core.SourceReply,
		Content: "I will keep " + marker + " safe", Delivery: core.DeliverySending, CreatedAt: t0.Add(time.Second),
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte("notes on " + marker)}}}
	require.NoError(t, st.AppendMessage(ctx, reply))
	recs, err := st.SessionRecords(ctx, conv.ID)
	require.NoError(t, err)
	require.NoError(t, st.SaveSummary(ctx, recs[0].ID, "They told me "+marker))
	_, err = st.FreezePrompt(ctx, recs[0].ID, "You know the word "+marker)
	require.NoError(t, err)
	require.NoError(t, st.CreateJob(ctx, &core.Job{ConversationID: conv.ID, Kind: core.JobAgentTurn, Status: core.JobPending,
		Name: "daily", Text: "ask about " + marker, Recurrence: "0 9 * * *", DueAt: t0.Add(time.Hour), CreatedAt: t0}))
	at := db.Time(t0)
	for _, stmt := range []struct {
		q    string
		args []any
	}{
		{`UPDATE runs SET record = ? WHERE conversation_id = ?`, []any{`{"output":"` + marker + `"}`, conv.ID}},
		{`INSERT INTO answered_questions (message_id, answer_id, answered_at) VALUES (?, ?, ?)`, []any{reply.ID, in.Message.ID, at}},
		{`INSERT INTO mood_points (conversation_id, session_record_id, valence, arousal, source, reason, created_at)
			VALUES (?, ?, 0.5, 0.5, 'model', ?, ?)`, []any{conv.ID, recs[0].ID, "glad about " + marker, at}},
		{`INSERT INTO facts (conversation_id, fact_key, content, created_at, last_accessed_at) VALUES (?, 'F01', ?, ?, ?)`,
			[]any{conv.ID, "Their word is " + marker, at, at}},
		{`INSERT INTO embeddings (conversation_id, message_id, model, vec, created_at) VALUES (?, ?, 'm', ?, ?)`,
			[]any{conv.ID, in.Message.ID, []byte("vector of " + marker), at}},
		{`INSERT INTO embed_again (message_id) VALUES (?)`, []any{reply.ID}},
	} {
		require.NoError(t, st.DB().WithContext(ctx).Exec(stmt.q, stmt.args...).Error, stmt.q)
	}
	_, err = st.IndexPending(ctx)
	require.NoError(t, err)
	return conv
}

// rowsOf counts a conversation's rows in every table that holds some,
// named here rather than found as EraseConversation finds them.
func rowsOf(t *testing.T, st *store.Store, conv int64) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	count := func(table, where string) {
		var n int64
		require.NoError(t, st.DB().WithContext(t.Context()).Raw(`SELECT COUNT(*) FROM `+table+` WHERE `+where, conv).Row().Scan(&n))
		out[table] = n
	}
	count("conversations", "id = ?")
	for _, table := range []string{"messages", "runs", "session_records", "jobs", "mood_points", "facts", "embeddings"} {
		count(table, "conversation_id = ?")
	}
	for _, table := range []string{"message_files", "answered_questions", "embed_again"} {
		count(table, "message_id IN (SELECT id FROM messages WHERE conversation_id = ?)")
	}
	return out
}

// fileBytes reads the SQLite database file and its WAL, as they are while
// the store is open.
func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	wal, err := os.ReadFile(path + "-wal")
	if !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
	}
	return append(raw, wal...)
}

// indexTerms counts the terms of SQLite's two search indexes holding
// word, read from their segments (fts4aux): a document's terms stay in
// older segments after its deletion until they are merged.
func indexTerms(t *testing.T, st *store.Store, word string) int64 {
	t.Helper()
	db := st.DB().WithContext(t.Context())
	var total int64
	for _, table := range []string{"message_search", "message_search_all"} {
		require.NoError(t, db.Exec(`CREATE VIRTUAL TABLE temp.terms USING fts4aux(main, `+table+`)`).Error)
		var n int64
		err := db.Raw(`SELECT COUNT(*) FROM temp.terms WHERE term LIKE ?`, "%"+word+"%").Row().Scan(&n)
		require.NoError(t, db.Exec(`DROP TABLE temp.terms`).Error)
		require.NoError(t, err)
		total += n
	}
	return total
}

// rowsHolding counts the rows of every table of the store's PostgreSQL
// schema whose text holds word, or whose bytes do (bytea is text as hex).
func rowsHolding(t *testing.T, st *store.Store, word string) int64 {
	t.Helper()
	db := st.DB().WithContext(t.Context())
	var tables []string
	require.NoError(t, db.Raw(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`).Scan(&tables).Error)
	require.Contains(t, tables, "embeddings")
	var total int64
	for _, table := range tables {
		var n int64
		require.NoError(t, db.Raw(`SELECT COUNT(*) FROM "`+table+`" r WHERE r::text LIKE ? OR r::text LIKE ?`,
			"%"+word+"%", "%"+hex.EncodeToString([]byte(word))+"%").Row().Scan(&n), table)
		total += n // erasures among them: its row must hold none
	}
	return total
}
