package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/store"
)

// SeedWords are the words SeedLarge's messages are made of, each in about
// one message in fifteen; SeedRareWord is in one message in a thousand.
var SeedWords = strings.Fields(`the a and to of in is it you that was for on are with as his they be at one have
	this from or had by hot word but what some we can out other were all there when up use your how said an each
	bread garden weather coffee exam movie train rain sunny sleep dinner music walk cat dog friend`)

// SeedRareWord is a word SeedLarge puts in one message in a thousand.
const SeedRareWord = "zeppelin"

// SeedNames are the first names of SeedLarge's users: conversation c is
// SeedNames[c % len(SeedNames)] followed by c ("Maria 17").
var SeedNames = []string{"Maria", "Jonas", "Aiko", "Mateo", "Fatima", "Liam", "Chen", "Olga",
	"Kwame", "Sofia", "Ravi", "Elena", "Tomás", "Yuki", "Noah", "Amara"}

// SeedModels are the models SeedLarge's runs used: runs of the oldest tenth
// have "" (from before the store kept it), then one in five the second,
// the rest the first.
var SeedModels = []string{"gpt-4o-mini", "gpt-4o"}

// SeedSpan is how far back SeedLarge's messages go from the time it is
// called; pending jobs are due over the next SeedDueSpan.
const (
	SeedSpan    = 365 * 24 * time.Hour
	SeedDueSpan = 60 * 24 * time.Hour
)

// SeedLarge fills an empty, migrated store with a large history in a few
// INSERT ... SELECT statements (seconds, not minutes, for a million
// messages), for benchmarks:
//
//   - conversations: one per 200 messages, on telegram, discord and web in
//     turn, named after SeedNames, with user ids "user-<c>" and time zones
//     Europe/Berlin, America/New_York, Asia/Tokyo or none;
//   - messages, evenly over the SeedSpan before now, in pairs of a user
//     message and the bot's answer five seconds later, conversations in
//     turn; each pair is a run (user_turn, finished with the answer, with
//     tokens and a model, see SeedModels). One pair in 50 fails (the
//     answer is a failure notice), one in 1,000 is a reply that could not
//     be sent (the run fails, the message is kept undelivered), one in 200
//     ends silent. Messages hold 4–5 of SeedWords, and one in a thousand
//     SeedRareWord; they are indexed for search;
//   - jobs, over the conversations: seven in ten message jobs, two
//     recurring turns, one proactive; 40% pending (due over the next
//     SeedDueSpan), 45% sent, 10% cancelled, 5% failed (these over the
//     past SeedSpan).
func SeedLarge(ctx context.Context, st *store.Store, messages, jobs int) error {
	if messages < 2 {
		return errors.New("seeding: at least 2 messages")
	}
	db := st.DB().WithContext(ctx)
	var n int64
	if err := db.Raw(`SELECT COUNT(*) FROM conversations`).Row().Scan(&n); err != nil {
		return fmt.Errorf("seeding: %w", err)
	}
	if n > 0 {
		return errors.New("seeding: the store is not empty")
	}
	end := time.Now().UTC().Truncate(time.Second)
	s := seeder{pg: st.Driver() == store.DriverPostgres, pairs: messages / 2, convs: max(1, messages/200), jobs: jobs,
		endSec: end.Unix(), span: int64(SeedSpan / time.Second), due: int64(SeedDueSpan / time.Second)}
	stmts := []string{s.conversations(), s.runs(), s.userMessages(), s.answers(), s.lastSeqs()}
	if jobs > 0 {
		stmts = append(stmts, s.jobRows())
	}
	stmts = append(stmts, s.afterRows()...)
	// The tables' secondary indexes are built after the rows are in, at
	// once, rather than row by row: as the migrations defined them.
	indexes, err := seedIndexes(ctx, st)
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		stmts = append([]string{`DROP INDEX ` + ix.name}, stmts...)
		stmts = append(stmts, ix.def)
	}
	if s.pg {
		// What autovacuum does after a bulk load: statistics, and the
		// visibility map index-only scans rely on.
		stmts = append(stmts, `VACUUM ANALYZE conversations, runs, messages, jobs`)
	}
	for _, q := range stmts {
		if err := db.Exec(q).Error; err != nil {
			return fmt.Errorf("seeding: %w\n%s", err, q)
		}
	}
	return nil
}

// seeder writes SeedLarge's statements: a few figures, and SQL
// expressions over the row number s.i of a generated series.
type seeder struct {
	pg                bool
	pairs, convs      int   // user messages (each with an answer), conversations
	jobs              int   // jobs to seed
	endSec, span, due int64 // now, SeedSpan and SeedDueSpan, in seconds
}

// series counts s.i from 1 to n.
func (s seeder) series(n int) string {
	if s.pg {
		return fmt.Sprintf(`generate_series(1::bigint, %d) AS s(i)`, n)
	}
	return fmt.Sprintf(`(WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d) SELECT i FROM s) s`, n)
}

// ts is the time e seconds after the epoch as the store keeps it.
func (s seeder) ts(e string) string {
	if s.pg {
		return `to_timestamp(` + e + `)`
	}
	return `strftime('%Y-%m-%dT%H:%M:%S', ` + e + `, 'unixepoch') || '.000000Z'`
}

// conv is pair s.i's conversation (conversations in turn), seq its user
// message's number in it, and userAt when the user wrote it (the answer
// comes five seconds later).
func (s seeder) conv() string { return fmt.Sprintf(`(((s.i - 1) %% %d) + 1)`, s.convs) }
func (s seeder) seq() string  { return fmt.Sprintf(`(2 * ((s.i - 1) / %d) + 1)`, s.convs) }
func (s seeder) userAt() string {
	return fmt.Sprintf(`(%d - %d + s.i * %d / %d)`, s.endSec, s.span, s.span, s.pairs)
}

// text is a message of 4–5 SeedWords, one in a thousand with SeedRareWord;
// salt tells a user message (0) from its answer (1). Its words come from
// wordJoins(salt), with withWords before the statement.
func (s seeder) text(salt int) string {
	return fmt.Sprintf(`w1.w || ' ' || w2.w || ' ' || w3.w || ' ' || w4.w
			|| CASE WHEN (s.i + %[1]d) %% 2 = 0 THEN ' ' || w5.w ELSE '' END
			|| CASE WHEN (2 * s.i + %[1]d) %% 1000 = 0 THEN ' %[2]s' ELSE '' END`, salt, SeedRareWord)
}

func (s seeder) wordJoins(salt int) string {
	var b strings.Builder
	for k, p := range []int{7, 13, 29, 41, 53} {
		fmt.Fprintf(&b, ` JOIN words w%[1]d ON w%[1]d.k = ((s.i + %[2]d) * %[3]d + (s.i + %[2]d) / %[4]d) %% %[5]d`,
			k+1, salt, p, 3+k, len(SeedWords))
	}
	return b.String()
}

func (s seeder) withWords() string {
	var words strings.Builder
	for i, w := range SeedWords {
		if i > 0 {
			words.WriteString(", ")
		}
		fmt.Fprintf(&words, "(%d, '%s')", i, w)
	}
	return `WITH words (k, w) AS (VALUES ` + words.String() + `) `
}

// pgCol is c on PostgreSQL, nothing on SQLite.
func (s seeder) pgCol(c string) string {
	if s.pg {
		return c
	}
	return ""
}

func (s seeder) conversations() string {
	return fmt.Sprintf(`WITH names (k, name) AS (VALUES %[3]s)
			INSERT INTO conversations (id, platform, channel_thread_id, channel_user_id, display_name, time_zone,
				last_seq, created_at, updated_at)
			SELECT s.i, CASE s.i %% 3 WHEN 0 THEN 'telegram' WHEN 1 THEN 'discord' ELSE 'web' END, 'chat-' || s.i,
				'user-' || s.i, n.name || ' ' || s.i,
				CASE s.i %% 4 WHEN 0 THEN 'Europe/Berlin' WHEN 1 THEN 'America/New_York' WHEN 2 THEN 'Asia/Tokyo' ELSE '' END,
				0, %[2]s, %[2]s
			FROM %[1]s JOIN names n ON n.k = s.i %% %[4]d`,
		s.series(s.convs), s.ts(fmt.Sprint(s.endSec-s.span-86400)), seedNameValues(), len(SeedNames))
}

func (s seeder) runs() string {
	model := fmt.Sprintf(`CASE WHEN s.i <= %d THEN '' WHEN s.i %% 5 = 0 THEN '%s' ELSE '%s' END`,
		s.pairs/10, SeedModels[1], SeedModels[0])
	status := `CASE WHEN s.i % 50 = 0 OR s.i % 1000 = 777 THEN 'failed' ELSE 'succeeded' END`
	runError := `CASE WHEN s.i % 50 = 0 THEN 'llm: 503 Service Unavailable'
		WHEN s.i % 1000 = 777 THEN 'sending reply: telegram: 502 Bad Gateway' ELSE '' END`
	return fmt.Sprintf(`INSERT INTO runs (id, conversation_id, kind, status, trigger_message_id, run_after, owner,
				started_at, heartbeat_at, finished_at, error, prompt_tokens, completion_tokens, total_tokens, model,
				created_at, updated_at)
			SELECT s.i, %[2]s, 'user_turn', %[3]s, 2 * s.i - 1, %[4]s, 'seed', %[4]s, %[5]s, %[5]s, %[6]s,
				600 + (s.i * 37) %% 900, 20 + (s.i * 13) %% 300, 620 + (s.i * 37) %% 900 + (s.i * 13) %% 300, %[7]s,
				%[4]s, %[5]s
			FROM %[1]s`,
		s.series(s.pairs), s.conv(), status, s.ts(s.userAt()), s.ts(s.userAt()+" + 5"), runError, model)
}

func (s seeder) userMessages() string {
	return s.withWords() + fmt.Sprintf(`INSERT INTO messages (id, conversation_id, seq, role, content, source, platform_message_id,
				metadata, created_at%[5]s)
			SELECT 2 * s.i - 1, %[2]s, %[3]s, 'user', %[4]s, 'user', 'in-' || s.i, '{}', %[6]s%[7]s
			FROM %[1]s %[8]s`,
		s.series(s.pairs), s.conv(), s.seq(), s.text(0), s.pgCol(", search"), s.ts(s.userAt()),
		s.pgCol(", to_tsvector('simple', "+s.text(0)+")"), s.wordJoins(0))
}

// answers are the bot's: one in 50 a failure notice, one in 1,000 not
// delivered, one in 200 silent.
func (s seeder) answers() string {
	answer := `CASE WHEN s.i % 50 = 0 THEN 'Sorry, something went wrong.' WHEN s.i % 200 = 7 THEN '' ELSE ` + s.text(1) + ` END`
	return s.withWords() + fmt.Sprintf(`INSERT INTO messages (id, conversation_id, seq, role, content, source, platform_message_id,
				run_id, metadata, created_at%[5]s)
			SELECT 2 * s.i, %[2]s, %[3]s + 1, 'assistant', %[4]s, CASE WHEN s.i %% 50 = 0 THEN 'system' ELSE 'reply' END,
				CASE WHEN s.i %% 1000 = 777 OR s.i %% 200 = 7 THEN '' ELSE 'out-' || s.i END, s.i,
				CASE WHEN s.i %% 50 = 0 THEN '{"failure_notice":true}'
					WHEN s.i %% 1000 = 777 THEN '{"undelivered":"telegram: 502 Bad Gateway"}'
					WHEN s.i %% 200 = 7 THEN '{"silent":true}' ELSE '{}' END,
				%[6]s%[7]s
			FROM %[1]s %[8]s`,
		s.series(s.pairs), s.conv(), s.seq(), answer, s.pgCol(", search"), s.ts(s.userAt()+" + 5"),
		s.pgCol(", CASE WHEN s.i % 50 = 0 OR s.i % 200 = 7 THEN NULL ELSE to_tsvector('simple', "+answer+") END"),
		s.wordJoins(1))
}

// lastSeqs sets each conversation's last message. Conversation id takes
// pairs id, id + convs, ...: the newest is the last of them.
func (s seeder) lastSeqs() string {
	last := fmt.Sprintf(`%d - %d + (id + ((%d - id) / %d) * %d) * %d / %d + 5`,
		s.endSec, s.span, s.pairs, s.convs, s.convs, s.span, s.pairs)
	return fmt.Sprintf(`UPDATE conversations SET last_seq = 2 * ((%[1]d - id) / %[2]d + 1),
			last_message_at = %[3]s, updated_at = %[4]s`,
		s.pairs, s.convs, s.ts(last), s.ts(fmt.Sprint(s.endSec)))
}

// jobRows are seven in ten message jobs, two recurring turns, one
// proactive; 40% pending, 45% sent, 10% cancelled, 5% failed.
func (s seeder) jobRows() string {
	status := `CASE WHEN s.i % 20 < 8 THEN 'pending' WHEN s.i % 20 < 17 THEN 'sent' WHEN s.i % 20 < 19 THEN 'cancelled' ELSE 'failed' END`
	at := fmt.Sprintf(`CASE WHEN s.i %% 20 < 8 THEN %d + 60 + s.i * %d / %d ELSE %d - (s.i * 7919) %% %d END`,
		s.endSec, s.due, s.jobs, s.endSec, s.span)
	return fmt.Sprintf(`INSERT INTO jobs (id, conversation_id, kind, status, text, name, due_at, recurrence,
				attempts, last_error, origin, sent_at, next_run_at, created_at, updated_at)
			SELECT s.i, ((s.i * 7) %% %[2]d) + 1, j.kind, j.status, 'Reminder ' || s.i, 'job ' || s.i, %[3]s,
				CASE WHEN j.kind = 'agent_turn' THEN '0 9 * * *' ELSE '' END,
				CASE j.status WHEN 'failed' THEN 3 WHEN 'sent' THEN 1 ELSE 0 END,
				CASE j.status WHEN 'failed' THEN 'telegram: 403 Forbidden: bot was blocked by the user' ELSE '' END,
				'tool', CASE j.status WHEN 'sent' THEN %[3]s END, CASE WHEN j.kind = 'agent_turn' THEN %[3]s END,
				CASE j.status WHEN 'pending' THEN %[4]s ELSE %[3]s END, CASE j.status WHEN 'pending' THEN %[4]s ELSE %[3]s END
			FROM %[1]s JOIN (SELECT s.i AS i,
				CASE WHEN s.i %% 10 < 7 THEN 'message' WHEN s.i %% 10 < 9 THEN 'agent_turn' ELSE 'proactive' END AS kind,
				%[5]s AS status FROM %[1]s) j ON j.i = s.i`,
		s.series(s.jobs), s.convs, s.ts(at), s.ts(fmt.Sprintf(`%d - (s.i * 7919) %% %d`, s.endSec, 30*86400)), status)
}

// afterRows are what the store keeps beside the rows: PostgreSQL's id
// sequences, SQLite's search indexes.
func (s seeder) afterRows() []string {
	var stmts []string
	if s.pg {
		for _, t := range []string{"conversations", "runs", "messages", "jobs"} {
			stmts = append(stmts, fmt.Sprintf(`SELECT setval(pg_get_serial_sequence('%[1]s', 'id'), GREATEST((SELECT MAX(id) FROM %[1]s), 1))`, t))
		}
		return stmts
	}
	// The search indexes, as IndexPending would write them (search.go):
	// each word of a message prefixed with its conversation, and the
	// words as they are under a docid that packs the conversation.
	return append(stmts, `INSERT INTO message_search (docid, body)
				SELECT id, 'c' || conversation_id || 'x' || replace(content, ' ', ' c' || conversation_id || 'x')
				FROM messages WHERE content <> '' AND metadata NOT LIKE '%failure_notice%' ORDER BY id`,
		`INSERT INTO message_search_all (docid, body)
				SELECT (conversation_id << 36) | id, content
				FROM messages WHERE content <> '' AND metadata NOT LIKE '%failure_notice%' ORDER BY 1`,
		`UPDATE search_progress SET last_message_id = (SELECT MAX(id) FROM messages) WHERE id = 1`)
}

type seedIndex struct{ name, def string }

// seedIndexes reads the definitions of the secondary indexes of the
// tables SeedLarge fills.
func seedIndexes(ctx context.Context, st *store.Store) ([]seedIndex, error) {
	q := `SELECT name, sql FROM sqlite_master
		WHERE type = 'index' AND tbl_name IN ('messages', 'runs', 'jobs') AND sql IS NOT NULL ORDER BY name`
	if st.Driver() == store.DriverPostgres {
		q = `SELECT indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename IN ('messages', 'runs', 'jobs')
			  AND indexname NOT IN (SELECT conname FROM pg_constraint) ORDER BY indexname`
	}
	rows, err := st.DB().WithContext(ctx).Raw(q).Rows()
	if err != nil {
		return nil, fmt.Errorf("seeding: reading indexes: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []seedIndex
	for rows.Next() {
		var ix seedIndex
		if err := rows.Scan(&ix.name, &ix.def); err != nil {
			return nil, fmt.Errorf("seeding: reading indexes: %w", err)
		}
		out = append(out, ix)
	}
	return out, rows.Err()
}

func seedNameValues() string {
	var b strings.Builder
	for i, n := range SeedNames {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, '%s')", i, n)
	}
	return b.String()
}
