package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// limitDrivers opens a migrated store per driver: SQLite on a file, and
// PostgreSQL when PARLEY_TEST_POSTGRES_DSN is set.
var limitDrivers = []struct {
	name string
	open func(b *testing.B) *store.Store
}{
	{"sqlite", func(b *testing.B) *store.Store {
		st, err := store.Open(b.Context(), store.Options{Driver: store.DriverSQLite, DSN: filepath.Join(b.TempDir(), "limits.db")})
		require.NoError(b, err)
		b.Cleanup(func() { _ = st.Close() })
		return st
	}},
	{"postgres", func(b *testing.B) *store.Store {
		if os.Getenv(postgresEnv) == "" {
			b.Skip(postgresEnv + " not set")
		}
		return storetest.OpenPostgres(b)
	}},
}

// seedTurns gives conversation conv pairs turns (a user message, the
// answer five seconds later, a finished user_turn run of 1,000 tokens),
// evenly over span before end.
func seedTurns(b *testing.B, st *store.Store, conv int64, pairs int, span time.Duration, end time.Time) {
	b.Helper()
	pg := st.Driver() == store.DriverPostgres
	series := fmt.Sprintf(`(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) SELECT i FROM s) s`, pairs)
	ts := func(e string) string { return `strftime('%Y-%m-%dT%H:%M:%S', ` + e + `, 'unixepoch') || '.000000Z'` }
	if pg {
		series = fmt.Sprintf(`generate_series(1::bigint, %d) AS s(i)`, pairs)
		ts = func(e string) string { return `to_timestamp(` + e + `)` }
	}
	at := fmt.Sprintf(`(%d - %d + s.i * %d / %d)`, end.Unix(), int64(span/time.Second), int64(span/time.Second), pairs)
	db := st.DB().WithContext(b.Context())
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO conversations (id, platform, channel_thread_id, channel_user_id, created_at, updated_at, last_seq)
			VALUES (%d, 'telegram', 'chat-%d', 'user-%d', %s, %s, %d)`, conv, conv, conv, ts(fmt.Sprint(end.Unix())), ts(fmt.Sprint(end.Unix())), 2*pairs),
		fmt.Sprintf(`INSERT INTO runs (conversation_id, kind, status, run_after, started_at, finished_at, total_tokens, created_at, updated_at)
			SELECT %d, 'user_turn', 'succeeded', %s, %s, %s, 1000, %s, %s FROM %s ORDER BY s.i`,
			conv, ts(at), ts(at), ts(at+" + 5"), ts(at), ts(at+" + 5"), series),
		fmt.Sprintf(`INSERT INTO messages (conversation_id, seq, role, content, source, metadata, created_at)
			SELECT %d, 2 * s.i - 1, 'user', 'hello', 'user', '{}', %s FROM %s`, conv, ts(at), series),
		fmt.Sprintf(`INSERT INTO messages (conversation_id, seq, role, content, source, metadata, created_at)
			SELECT %d, 2 * s.i, 'assistant', 'hi', 'reply', '{}', %s FROM %s`, conv, ts(at+" + 5"), series),
	} {
		require.NoError(b, db.Exec(q).Error)
	}
	if pg {
		require.NoError(b, db.Exec(`SELECT setval(pg_get_serial_sequence('conversations', 'id'), (SELECT MAX(id) FROM conversations))`).Error)
		require.NoError(b, db.Exec(`ANALYZE`).Error)
	}
}

// BenchmarkLimitUsage reads every limit of a conversation as an inbound
// message does (messages_per_minute 20, turns_per_day 200, tokens_per_day,
// the notice in force) for a conversation of 10 turns in the last hour and
// for one of 100,000 turns over a year (about 270 in the last day): the
// cost follows the window, not the history.
func BenchmarkLimitUsage(b *testing.B) {
	end := time.Now().UTC().Truncate(time.Second)
	for _, drv := range limitDrivers {
		b.Run(drv.name, func(b *testing.B) {
			st := drv.open(b)
			require.NoError(b, st.Migrate(b.Context()))
			seedTurns(b, st, 1, 10, time.Hour, end)
			seedTurns(b, st, 2, 100_000, 365*24*time.Hour, end)
			for _, c := range []struct {
				name string
				conv int64
			}{{"short", 1}, {"long", 2}} {
				b.Run(c.name, func(b *testing.B) {
					q := core.LimitQuery{ConversationID: c.conv, NthMessage: 20, NthTurn: 200,
						TokensSince: end.Add(-24 * time.Hour), Last: true}
					for b.Loop() {
						if _, err := st.LimitUsage(context.Background(), q); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkLimitedMessages times the console's count of held messages
// over the last day with 200,000 user messages in it over 1,000
// conversations, one in a hundred held.
func BenchmarkLimitedMessages(b *testing.B) {
	end := time.Now().UTC().Truncate(time.Second)
	const messages = 200_000
	for _, drv := range limitDrivers {
		b.Run(drv.name, func(b *testing.B) {
			st := drv.open(b)
			require.NoError(b, st.Migrate(b.Context()))
			pg := st.Driver() == store.DriverPostgres
			series := fmt.Sprintf(`(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) SELECT i FROM s) s`, messages)
			ts := func(e string) string { return `strftime('%Y-%m-%dT%H:%M:%S', ` + e + `, 'unixepoch') || '.000000Z'` }
			if pg {
				series = fmt.Sprintf(`generate_series(1::bigint, %d) AS s(i)`, messages)
				ts = func(e string) string { return `to_timestamp(` + e + `)` }
			}
			at := fmt.Sprintf(`(%d - 86000 + s.i * 86000 / %d)`, end.Unix(), messages)
			db := st.DB().WithContext(b.Context())
			for _, q := range []string{
				fmt.Sprintf(`INSERT INTO conversations (id, platform, channel_thread_id, channel_user_id, created_at, updated_at)
					SELECT s.i, 'web', 'c-' || s.i, 'u-' || s.i, %s, %s FROM %s WHERE s.i <= 1000`,
					ts(fmt.Sprint(end.Unix())), ts(fmt.Sprint(end.Unix())), series),
				fmt.Sprintf(`INSERT INTO messages (conversation_id, seq, role, content, source, metadata, created_at)
					SELECT (s.i %% 1000) + 1, s.i, 'user', 'hello', 'user',
						CASE WHEN s.i %% 100 = 0 THEN '{"limit_until":"2030-01-01T00:00:00Z","limited":"turns_per_day"}' ELSE '{}' END, %s
					FROM %s`, ts(at), series),
			} {
				require.NoError(b, db.Exec(q).Error)
			}
			if pg {
				require.NoError(b, db.Exec(`ANALYZE`).Error)
			}
			for b.Loop() {
				sum, err := st.LimitedMessages(context.Background(), end.Add(-24*time.Hour), 10)
				if err != nil {
					b.Fatal(err)
				}
				if sum.ByLimit[core.LimitTurnsPerDay] != messages/100 {
					b.Fatalf("counted %v", sum.ByLimit)
				}
			}
		})
	}
}
