package memory_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/vectors"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// benchDims is the length of the benchmarks' vectors: what
// text-embedding-3-small gives with dimensions: 256.
const benchDims = 256

// BenchmarkHybridHistory is retrieve_history with embeddings (the words'
// search and the meaning's, fused) for one user among a store's: a user
// of 100,000 messages alone, and a store of 1,000,000 (1,000 users of
// 1,000), on SQLite, on PostgreSQL with the plugin's search and on
// PostgreSQL with pgvector. Each op embeds the question at the fake model
// (over HTTP) and searches one random user; the vectors are loaded before
// the timer starts, as a running bot has them. It reports p50/p95/p99.
//
//	go test -run '^$' -bench BenchmarkHybridHistory -benchtime 400x ./plugins/memory/
func BenchmarkHybridHistory(b *testing.B) {
	// A case's store is seeded once, for the parent: the testing package
	// runs a sub-benchmark's function again for its N after a first run
	// with N=1, and a second seeding (with pgvector's index build) costs
	// more than the measurement.
	parent := b
	seeded := map[string]*store.Store{}
	for _, c := range []struct {
		name           string
		open           func(testing.TB) *store.Store
		pgvector       bool
		users, perUser int
	}{
		{"sqlite/one-user-100k", storetest.OpenSQLite, false, 1, 100_000},
		{"sqlite/store-1M", storetest.OpenSQLite, false, 1000, 1000},
		{"postgres/one-user-100k", storetest.OpenPostgres, false, 1, 100_000},
		{"postgres/store-1M", storetest.OpenPostgres, false, 1000, 1000},
		{"pgvector/one-user-100k", storetest.OpenPostgres, true, 1, 100_000},
		{"pgvector/store-1M", storetest.OpenPostgres, true, 1000, 1000},
	} {
		b.Run(c.name, func(b *testing.B) {
			concepts, cases := paraphrases(b)
			emb := llmtest.Embedding{Concepts: concepts}
			st, ok := seeded[c.name]
			if !ok {
				st = c.open(parent)
				require.NoError(b, st.Migrate(b.Context(), memory.New()))
				start := time.Now()
				seedVectors(b, st, emb, c.users, c.perUser, cases, c.pgvector)
				b.Logf("%d messages and their vectors stored in %v", c.users*c.perUser, time.Since(start).Round(time.Second))
				seeded[c.name] = st
			}
			mb := startMeaning(b, storeCase{st: st, pgvector: c.pgvector}, llmtest.NewServer(b, llmtest.WithEmbedding(emb)), "embed-test",
				func(p *memory.Plugin) { p.Embeddings.Dimensions = benchDims })
			if c.pgvector && !ok {
				start := time.Now()
				// As an owner would for a large first build (pgvector's
				// advice): the graph in memory, not paged.
				require.NoError(b, st.DB().Connection(func(tx *gorm.DB) error {
					if err := tx.Exec(`SET maintenance_work_mem = '2GB'`).Error; err != nil {
						return err
					}
					return tx.Exec(memory.PgvectorIndexStatement(mb.p, benchDims)).Error
				}))
				memory.IndexWithPgvector(mb.p, benchDims)
				require.NoError(b, st.DB().Exec(`VACUUM ANALYZE embeddings`).Error)
				b.Logf("pgvector's index built in %v", time.Since(start).Round(time.Second))
			}
			r := rand.New(rand.NewPCG(1, 2))
			ask := func() int {
				conv := int64(1 + r.IntN(c.users))
				turn := &core.Turn{Conversation: core.Conversation{ID: conv}, Now: t0, Location: time.UTC}
				q, _ := json.Marshal(map[string]string{"keyword": cases[r.IntN(len(cases))].query})
				out, err := mb.call(b, turn, "retrieve_history", string(q))
				require.NoError(b, err)
				return strings.Count(out, `"text"`)
			}
			for range min(c.users, 50) { // warm: each user's vectors loaded once
				ask()
			}
			lat := make([]time.Duration, 0, b.N)
			found := 0
			b.ResetTimer()
			for range b.N {
				t := time.Now()
				found += ask()
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			slices.Sort(lat)
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(found)/float64(b.N), "hits/op")
		})
	}
}

// seedVectors stores users conversations of perUser messages each (the
// labelled messages among filler), their vectors of embed-test at
// benchDims, and their progress as embedded, by SQL in batches.
func seedVectors(b *testing.B, st *store.Store, emb llmtest.Embedding, users, perUser int, cases []paraphrase, pgvector bool) {
	b.Helper()
	db := st.DB()
	pg := st.Database().Dialect() == core.DialectPostgres
	at := t0.Add(-time.Duration(perUser) * time.Minute)
	bind := func(t time.Time) any {
		if pg {
			return t
		}
		return t.UTC().Format("2006-01-02T15:04:05.000000Z")
	}
	for c := 1; c <= users; c++ {
		require.NoError(b, db.Exec(`INSERT INTO conversations (id, bot_id, platform, channel_thread_id, last_seq, embedded_seq, created_at, updated_at)
			VALUES (?, 'default', 'web', ?, ?, ?, ?, ?)`, c, fmt.Sprintf("u%d", c), perUser, perUser, bind(at), bind(at)).Error)
	}
	if pgvector { // as the plugin's start adds it
		require.NoError(b, db.Exec(`ALTER TABLE embeddings ADD COLUMN IF NOT EXISTS embedding public.vector`).Error)
	}
	r := rand.New(rand.NewPCG(9, 9))
	vectorOf := emb.Vectors()
	const batch = 200
	searchCol, search := "", ""
	if pg {
		searchCol, search = ", search", ", to_tsvector('simple', ?)"
	}
	vecCol, vecVal := "", ""
	if pgvector {
		vecCol, vecVal = ", embedding", ", CAST(? AS public.vector)"
	}
	id := int64(0)
	for c := 1; c <= users; c++ {
		for seq := 1; seq <= perUser; seq += batch {
			var mq, eq strings.Builder
			mq.WriteString(`INSERT INTO messages (id, conversation_id, seq, role, content, source, created_at` + searchCol + `) VALUES `)
			eq.WriteString(`INSERT INTO embeddings (conversation_id, message_id, model, vec, created_at` + vecCol + `) VALUES `)
			var margs, eargs []any
			for s := seq; s < seq+batch && s <= perUser; s++ {
				id++
				text := benchText(r, cases, s)
				if s > seq {
					mq.WriteByte(',')
					eq.WriteByte(',')
				}
				when := bind(at.Add(time.Duration(s) * time.Minute))
				mq.WriteString(`(?, ?, ?, 'user', ?, 'user', ?` + search + `)`)
				margs = append(margs, id, c, s, text, when)
				if pg {
					margs = append(margs, text)
				}
				v := vectorOf("embed-test", text, benchDims)
				eq.WriteString(`(?, ?, 'embed-test@256', ?, ?` + vecVal + `)`)
				eargs = append(eargs, c, id, vectors.Encode(v), when)
				if pgvector {
					eargs = append(eargs, memory.VectorLiteral(v))
				}
			}
			require.NoError(b, db.Exec(mq.String(), margs...).Error)
			require.NoError(b, db.Exec(eq.String(), eargs...).Error)
		}
	}
	require.NoError(b, db.Exec(`INSERT INTO embedding_models (bot_id, model) VALUES ('default', 'embed-test@256')`).Error)
	if !pg {
		_, err := st.IndexPending(b.Context())
		require.NoError(b, err)
		return
	}
	// As autovacuum leaves a store that has been running: the GIN
	// index's pending entries merged, the statistics read.
	require.NoError(b, db.Exec(`VACUUM ANALYZE messages`).Error)
	require.NoError(b, db.Exec(`VACUUM ANALYZE embeddings`).Error)
}

// benchText is the seq-th message: now and then a labelled one, else
// everyday filler.
func benchText(r *rand.Rand, cases []paraphrase, seq int) string {
	if seq%97 == 0 {
		return cases[(seq/97)%len(cases)].stored
	}
	var w []string
	for range 5 + r.IntN(8) {
		w = append(w, fillerWords[r.IntN(len(fillerWords))])
	}
	return strings.Join(w, " ")
}

// BenchmarkEmbeddingPass is the background pass embedding a backlog:
// 20,000 messages over 100 conversations, stored but not embedded, at
// 256 dimensions against the fake model (which answers at once), from
// the plugin's start until it sleeps again. It reports messages a
// second and the store's bytes per message embedded.
//
//	go test -run '^$' -bench BenchmarkEmbeddingPass -benchtime 1x -count 3 ./plugins/memory/
func BenchmarkEmbeddingPass(b *testing.B) {
	const users, perUser = 100, 200
	for _, c := range []struct {
		name     string
		open     func(testing.TB) *store.Store
		pgvector bool
	}{
		{"sqlite", storetest.OpenSQLite, false},
		{"postgres", storetest.OpenPostgres, false},
		{"pgvector", storetest.OpenPostgres, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				concepts, cases := paraphrases(b)
				st := c.open(b)
				require.NoError(b, st.Migrate(b.Context(), memory.New()))
				emb := llmtest.Embedding{Concepts: concepts}
				seedVectors(b, st, emb, users, perUser, cases, c.pgvector)
				// Stored, not embedded: the pass has them all to do.
				require.NoError(b, st.DB().Exec(`DELETE FROM embeddings`).Error)
				require.NoError(b, st.DB().Exec(`UPDATE conversations SET embedded_seq = 0`).Error)
				before := storeBytes(b, st)
				fake := llmtest.NewServer(b, llmtest.WithEmbedding(emb))
				b.StartTimer()
				start := time.Now()
				startMeaning(b, storeCase{st: st, pgvector: c.pgvector}, fake, "embed-test",
					func(p *memory.Plugin) { p.Embeddings.Dimensions = benchDims })
				took := time.Since(start)
				b.StopTimer()
				require.Equal(b, users*perUser, countVectors(b, st))
				b.ReportMetric(float64(users*perUser)/took.Seconds(), "msgs/s")
				b.ReportMetric(float64(storeBytes(b, st)-before)/float64(users*perUser), "bytes/msg")
			}
		})
	}
}

// storeBytes is what the embeddings table and its indexes take on disk
// (PostgreSQL), or the database's pages in use (SQLite).
func storeBytes(b *testing.B, st *store.Store) int64 {
	b.Helper()
	if st.Database().Dialect() == core.DialectPostgres {
		var n int64
		require.NoError(b, st.DB().Raw(`SELECT pg_total_relation_size('embeddings')`).Scan(&n).Error)
		return n
	}
	// The pages in use, free ones left out (the embeddings are the only
	// rows the pass writes, with the conversations' progress).
	var pages, free, size int64
	db := st.DB()
	require.NoError(b, db.Raw(`PRAGMA page_count`).Scan(&pages).Error)
	require.NoError(b, db.Raw(`PRAGMA freelist_count`).Scan(&free).Error)
	require.NoError(b, db.Raw(`PRAGMA page_size`).Scan(&size).Error)
	return (pages - free) * size
}
