package store_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/store"
)

// seedSearchable stores convs conversations of perConv messages each,
// made of searchEnglish and searchChinese words, round-robin as real
// traffic comes, and indexes them in IndexPending's batches (so the
// search index has the segments it has in use), on the SQLite file dsn.
func seedSearchable(b *testing.B, dsn string, convs, perConv int) *store.Store {
	b.Helper()
	ctx := b.Context()
	st, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: dsn})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	require.NoError(b, st.Migrate(ctx))
	r := rand.New(rand.NewPCG(7, 11))
	db := st.DB()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000000Z")
	for c := 1; c <= convs; c++ {
		require.NoError(b, db.Exec(`INSERT INTO conversations (id, platform, channel_thread_id, last_seq, created_at, updated_at)
			VALUES (?, 'web', ?, ?, ?, ?)`, c, fmt.Sprintf("u%d", c), perConv, at, at).Error)
	}
	for seq := 1; seq <= perConv; seq++ {
		var q strings.Builder
		q.WriteString(`INSERT INTO messages (conversation_id, seq, role, content, source, created_at) VALUES `)
		var args []any
		for c := 1; c <= convs; c++ {
			if c > 1 {
				q.WriteByte(',')
			}
			q.WriteString(`(?, ?, 'user', ?, 'user', ?)`)
			args = append(args, c, seq, sentence(r), at)
		}
		require.NoError(b, db.Exec(q.String(), args...).Error)
	}
	_, err = st.IndexPending(ctx)
	require.NoError(b, err)
	return st
}

// BenchmarkEraseConversation erases one conversation of 1,000 messages
// a time from a SQLite file of 100,000 (100 conversations), its search
// index merged and the WAL truncated each time: what an /erase costs, and
// holds the writer for (the merge, optimizeSearch, is most of it).
func BenchmarkEraseConversation(b *testing.B) {
	const convs, perConv = 100, 1000
	st := seedSearchable(b, filepath.Join(b.TempDir(), "erase.db"), convs, perConv)
	id := int64(0)
	for b.Loop() {
		id++
		if id > convs {
			b.Fatal("every conversation erased: run fewer (-benchtime 20x)")
		}
		rows, err := st.EraseConversation(b.Context(), id, time.Now())
		require.NoError(b, err)
		require.Equal(b, int64(1+perConv), rows)
	}
}
