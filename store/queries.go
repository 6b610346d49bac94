package store

import (
	"strings"
	"time"
)

// queries holds what differs between dialects: how a time is bound and the
// statements whose SQL is not portable. Everything else is shared SQL with
// '?' placeholders, which gorm rewrites to $n for PostgreSQL.
type queries struct {
	sqlite bool
	// claimRun, claimMany, claimable and nextRun are indexed by scope:
	// they pick from every conversation, or only from one bot's
	// (scopeBot: r.bot_id bound to '?'), or only from conversations on
	// the platforms bound to '?' (scopePlatforms), or both.
	claimRun, claimMany, claimable, nextRun [4]string
	reapStale                               string
	// messagesAfter reads a conversation's newest messages after a seq.
	messagesAfter string
	// unanswered is true when the conversation bound to its two '?' has a
	// user message that no reply answered (see core's answered_seq).
	unanswered string
}

func newQueries(driver string) *queries {
	q := &queries{sqlite: driver != DriverPostgres}
	q.runClaims()

	// On SQLite the conversation is bound as +?: planning the ORDER BY,
	// SQLite weighs "conversation_id = ?" for the plans that do not use
	// it, which marks the statement to be compiled again on every use
	// (go-sqlite3 clears the bindings after each), so the history read
	// was parsed and planned each time. The unary plus keeps the value
	// and the plan, and hides the parameter from that estimate.
	conv := `?`
	if q.sqlite {
		conv = `+?`
	}
	q.messagesAfter = `SELECT ` + recentMessageCols + ` FROM messages
		WHERE conversation_id = ` + conv + ` AND seq > ? ORDER BY seq DESC LIMIT ?`

	heartbeat := `heartbeat_at`
	if !q.sqlite {
		heartbeat = `to_char(heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
	}
	// runs_one_running lists the running runs; few enough to filter.
	q.reapStale = `UPDATE runs SET status = 'failed', error = 'stale: no heartbeat since ' || ` + heartbeat + `,
		finished_at = ?, updated_at = ?
		WHERE status = 'running' AND heartbeat_at < ?
		RETURNING id, conversation_id, kind, trigger_message_id, grown`

	// A reply answers the messages up to its answered_seq, not those up
	// to its own place: a message that came while the reply was being
	// made is stored before it and still waits. Failure notices and
	// scheduled sends carry no answered_seq and answer nothing; a dropped
	// reply never reached the user; a message held by bot.limits starts
	// no turn by itself. Replies answer ever newer messages, so the max
	// is the newest reply's.
	answered, limited := `json_extract(a.metadata, '$.answered_seq')`, `json_extract(u.metadata, '$.limited')`
	if !q.sqlite {
		answered, limited = `(a.metadata::jsonb ->> 'answered_seq')::bigint`, `(u.metadata::jsonb ->> 'limited')`
	}
	q.unanswered = `EXISTS (SELECT 1 FROM messages u WHERE u.conversation_id = ? AND u.role = 'user'
		  AND u.source <> 'command' AND ` + limited + ` IS NULL
		  AND u.seq > COALESCE((SELECT max(` + answered + `) FROM messages a
		                        WHERE a.conversation_id = ? AND a.role = 'assistant'
		                          AND a.source <> 'command' AND a.delivery <> 'dropped'), -1))`
	return q
}

// runClaims builds the statements that claim runs and find the next one
// due, each for every platform and for some.
func (q *queries) runClaims() {
	// The oldest due queued run whose conversation has nothing running.
	// runs_queued_due walks due runs in order; runs_one_running answers the
	// NOT EXISTS probe.
	pick := func(scope string) string {
		p := `SELECT r.id FROM runs r
		WHERE r.status = 'queued' AND r.run_after <= ?` + scope + `
		  AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.conversation_id = r.conversation_id AND x.status = 'running')
		ORDER BY r.run_after, r.id LIMIT 1`
		if !q.sqlite {
			// Concurrent claimers skip rows another claimer holds instead
			// of queueing behind it.
			p += ` FOR UPDATE SKIP LOCKED`
		}
		return p
	}
	// A process serving only some platforms (parley chat serves the
	// console) must not claim runs it cannot deliver; a bot's view claims
	// only its bot's runs, walking runs_bot_queued_due.
	scopes := func(i int) string {
		sc := ""
		if i&scopeBot != 0 {
			sc += `
		  AND r.bot_id = ?`
		}
		if i&scopePlatforms != 0 {
			sc += `
		  AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = r.conversation_id AND c.platform IN ?)`
		}
		return sc
	}
	claim := func(scope string) string {
		return `UPDATE runs SET status = 'running', owner = ?, started_at = ?, heartbeat_at = ?, updated_at = ?
		WHERE status = 'queued' AND id = (` + pick(scope) + `)
		RETURNING ` + runCols
	}
	// Up to '?' runs in one statement: on PostgreSQL each claim of a
	// one-at-a-time loop walks the index entries of the runs claimed
	// before it (dead until vacuumed), so a batch of 64 cost 64 walks.
	// Due runs have distinct conversations (one queued run each). The
	// pick is a materialized CTE: as an IN subquery PostgreSQL may run it
	// again per row, and SKIP LOCKED then picks more than the limit.
	many := func(scope string) string {
		return `WITH picked AS MATERIALIZED (` + strings.Replace(pick(scope), "LIMIT 1", "LIMIT ?", 1) + `)
		UPDATE runs SET status = 'running', owner = ?, started_at = ?, heartbeat_at = ?, updated_at = ?
		WHERE status = 'queued' AND id IN (SELECT id FROM picked)
		RETURNING ` + runCols
	}
	// The earliest run a claim could take once due, due or not.
	next := func(scope string) string {
		return `SELECT r.run_after FROM runs r
		WHERE r.status = 'queued'` + scope + `
		  AND NOT EXISTS (SELECT 1 FROM runs x WHERE x.conversation_id = r.conversation_id AND x.status = 'running')
		ORDER BY r.run_after, r.id LIMIT 1`
	}
	for i := range 4 {
		sc := scopes(i)
		q.claimable[i] = strings.TrimSuffix(pick(sc), ` FOR UPDATE SKIP LOCKED`)
		q.claimRun[i], q.claimMany[i], q.nextRun[i] = claim(sc), many(sc), next(sc)
	}
}

// The bits of a claim's scope (see queries.claimRun).
const (
	scopeBot = 1 << iota
	scopePlatforms
)

// runScope is the index of a claim statement scoped to bot (none: "")
// and platforms (none: nil), and the arguments its scope binds.
func runScope(bot string, platforms []string) (int, []any) {
	i, args := 0, []any(nil)
	if bot != "" {
		i |= scopeBot
		args = append(args, bot)
	}
	if len(platforms) > 0 {
		i |= scopePlatforms
		args = append(args, platforms)
	}
	return i, args
}

// t binds a time: UTC, truncated to microseconds (what PostgreSQL keeps), as
// fixed-width text on SQLite.
func (q *queries) t(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if q.sqlite {
		return t.Format(timeLayout)
	}
	return t
}

// nt binds a nullable time.
func (q *queries) nt(t *time.Time) any {
	if t == nil {
		return nil
	}
	return q.t(*t)
}

// nid binds a nullable id.
func nid(id *int64) any {
	if id == nil {
		return nil
	}
	return *id
}

// utc is t as the store returns it: UTC, microsecond precision.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// claim returns the claim statement and its arguments for owner at t,
// limited to bot's runs and to platforms when given.
func (q *queries) claim(owner string, t any, bot string, platforms []string) (string, []any) {
	i, scope := runScope(bot, platforms)
	return q.claimRun[i], append([]any{owner, t, t, t, t}, scope...)
}

// probe returns the read-only "is anything claimable" query and arguments.
func (q *queries) probe(t any, bot string, platforms []string) (string, []any) {
	i, scope := runScope(bot, platforms)
	return q.claimable[i], append([]any{t}, scope...)
}

// next returns the "earliest claimable run time" query and arguments.
func (q *queries) next(bot string, platforms []string) (string, []any) {
	i, scope := runScope(bot, platforms)
	return q.nextRun[i], scope
}

// claimN returns the statement claiming up to n runs and its arguments.
func (q *queries) claimN(owner string, t any, n int, bot string, platforms []string) (string, []any) {
	i, scope := runScope(bot, platforms)
	return q.claimMany[i], append(append([]any{t}, scope...), n, owner, t, t, t)
}
