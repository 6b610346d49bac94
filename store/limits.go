package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

// Limits reads a conversation's recent use for per-user limits.
type Limits struct{ *dbs }

// Per-user limits (core/limits.go) read a conversation's recent use as an
// inbound message arrives, so each read costs what the limit it serves
// needs, never the length of the history: the N-th newest user message
// and the N-th newest user turn are read backwards along the
// conversation's own index (messages_conversation_seq, runs_conversation)
// and stop after about N rows. The tokens of the last day are summed over
// the runs after the newest one that finished before the day: a
// conversation runs one turn at a time, so its runs finish in the order
// of their ids, and both reads stop at the day's edge. Measured
// (BenchmarkLimitUsage, every limit read at once): 0.02 ms on SQLite for
// a conversation of 10 turns, 0.12 ms for one of 100,000 over a year
// (270 in its last day); about 0.5 ms for either on PostgreSQL, mostly
// the round trip.

var _ core.LimitStore = (*Store)(nil)

// heldMessage is the predicate of a message a limit held (the metadata
// key "limited"); the console's count of them repeats it.
const heldMessage = `metadata LIKE '%"limited":%'`

// ofConversation selects the runs of the conversation conv (an SQL
// expression; "?" takes the id as an argument, twice on PostgreSQL) for a
// read along runs_conversation. On PostgreSQL it is a range, not an
// equality, on purpose: pgx caches statements, PostgreSQL then plans one
// for any conversation, and with few conversations it takes each for
// half the table and walks the primary key instead, through every other
// conversation's runs (measured: 23 ms for a conversation of 10 runs
// beside one of 100,000, against 0.03 ms along runs_conversation). A
// range is estimated as a small share of the table on any statistics.
// SQLite plans each statement as it comes, and bounds a scan by a second
// column only after an equality on the first.
func (s *Limits) ofConversation(conv string) string {
	if s.q.sqlite {
		return `conversation_id = ` + conv
	}
	return `conversation_id BETWEEN ` + conv + ` AND ` + conv
}

// convArgs are the arguments ofConversation("?") takes.
func (s *Limits) convArgs(id int64) []any {
	if s.q.sqlite {
		return []any{id}
	}
	return []any{id, id}
}

// tokensAfterEdge bounds the runs of the conversation conv (an SQL
// expression, as for ofConversation) to those after the newest one that
// finished before the window (the last argument: the window's start).
// The window is open at its start, as the core's are.
func (s *Limits) tokensAfterEdge(conv string) string {
	return `id > COALESCE((SELECT id FROM runs WHERE ` + s.ofConversation(conv) + ` AND finished_at <= ?
		ORDER BY conversation_id DESC, id DESC LIMIT 1), 0)`
}

// LimitUsage reads what q asks about one conversation in one statement,
// the conversation found by its id or its thread; each part not asked for
// reads nothing.
func (s *Limits) LimitUsage(ctx context.Context, q core.LimitQuery) (core.LimitUsage, error) {
	cols := []string{`c.id`}
	var args []any
	if q.NthMessage > 0 {
		// Chat commands are SourceCommand: they do not count.
		cols = append(cols, `(SELECT created_at FROM messages WHERE conversation_id = c.id AND source = 'user'
			ORDER BY seq DESC LIMIT 1 OFFSET ?)`)
		args = append(args, q.NthMessage-1)
	} else {
		cols = append(cols, `NULL`)
	}
	if q.NthTurn > 0 {
		// A skipped run never called the model; a queued one has not
		// started (a reaped turn queued again keeps its old start).
		statuses := `'queued', 'skipped'`
		if q.NotRunning {
			statuses += `, 'running'`
		}
		cols = append(cols, `(SELECT started_at FROM runs WHERE `+s.ofConversation("c.id")+` AND kind = 'user_turn'
			AND started_at IS NOT NULL AND status NOT IN (`+statuses+`) ORDER BY conversation_id DESC, id DESC LIMIT 1 OFFSET ?)`)
		args = append(args, q.NthTurn-1)
	} else {
		cols = append(cols, `NULL`)
	}
	if !q.TokensSince.IsZero() {
		since := s.q.t(q.TokensSince)
		cols = append(cols, `(SELECT COALESCE(SUM(total_tokens), 0) FROM runs WHERE `+s.ofConversation("c.id")+` AND finished_at > ?
			AND `+s.tokensAfterEdge("c.id")+`)`)
		args = append(args, since, since)
	} else {
		cols = append(cols, `0`)
	}
	if q.Last {
		cols = append(cols, `(SELECT metadata FROM messages WHERE conversation_id = c.id AND source IN ('user', 'system')
			ORDER BY seq DESC LIMIT 1)`)
	} else {
		cols = append(cols, `NULL`)
	}
	where := `c.id = ?`
	args = append(args, q.ConversationID)
	if q.ConversationID == 0 {
		// The thread's conversation with the view's bot.
		cond, botArgs := s.botCond(`c.bot_id`)
		where = `c.platform = ? AND c.channel_thread_id = ?` + cond
		args = append(append(args[:len(args)-1], string(q.Platform), q.ChannelThreadID), botArgs...)
	}
	var u core.LimitUsage
	err := row(s.r.WithContext(ctx), `SELECT `+strings.Join(cols, ", ")+` FROM conversations c WHERE `+where, args...).
		Scan(&u.ConversationID, nullTimeCol{&u.NthMessageAt}, nullTimeCol{&u.NthTurnAt}, &u.Tokens, metadataCol{&u.Last})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return core.LimitUsage{}, nil // a new user has used nothing
	case err != nil:
		return core.LimitUsage{}, fmt.Errorf("reading the usage of conversation %d %s %s: %w",
			q.ConversationID, q.Platform, q.ChannelThreadID, err)
	}
	return u, nil
}

// TokenSpends lists the conversation's runs that finished after since
// with tokens used, oldest first.
func (s *Limits) TokenSpends(ctx context.Context, conversationID int64, since time.Time) ([]core.TokenSpend, error) {
	at := s.q.t(since)
	args := append(append(append(s.convArgs(conversationID), at), s.convArgs(conversationID)...), at)
	out, err := queryAll(s.r.WithContext(ctx), `SELECT finished_at, total_tokens FROM runs
		WHERE `+s.ofConversation("?")+` AND finished_at > ? AND total_tokens > 0 AND `+s.tokensAfterEdge("?")+`
		ORDER BY finished_at, id`, args,
		func(t *core.TokenSpend) []any { return []any{timeCol{&t.At}, &t.Tokens} })
	if err != nil {
		return nil, fmt.Errorf("reading the token usage of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// limitNames are the limits LimitedMessages counts, in its columns' order.
var limitNames = []string{core.LimitMessagesPerMinute, core.LimitTurnsPerDay, core.LimitTokensPerDay}

// LimitedMessages counts the messages limits held since since (in the
// view's bot's conversations), per limit,
// and lists the top users with the most of them (most first, then the
// most recent). It reads the held messages only, from the partial index
// messages_limited.
func (s *Limits) LimitedMessages(ctx context.Context, since time.Time, top int) (core.LimitedSummary, error) {
	var per []string
	for _, l := range limitNames {
		// The value as encodeMetadata writes it; '_' matches itself too.
		per = append(per, `SUM(CASE WHEN metadata LIKE '%"limited":"`+l+`"%' THEN 1 ELSE 0 END)`)
	}
	q := `SELECT c.id, c.platform, c.channel_user_id, c.display_name, m.n, m.last, ` + "m.l0, m.l1, m.l2" + `
		FROM (SELECT conversation_id, COUNT(*) AS n, MAX(created_at) AS last,
				` + per[0] + ` AS l0, ` + per[1] + ` AS l1, ` + per[2] + ` AS l2
			FROM messages WHERE ` + heldMessage + ` AND created_at >= ? GROUP BY conversation_id) m
		JOIN conversations c ON c.id = m.conversation_id WHERE 1 = 1`
	cond, botArgs := s.botCond(`c.bot_id`)
	q += cond
	type row struct {
		u      core.LimitedUser
		counts [3]int64
	}
	rows, err := queryAll(s.r.WithContext(ctx), q, append([]any{s.q.t(since)}, botArgs...), func(r *row) []any {
		return []any{&r.u.ConversationID, strCol[core.Platform]{&r.u.Platform}, &r.u.ChannelUserID, &r.u.DisplayName,
			&r.u.Held, timeCol{&r.u.Last}, &r.counts[0], &r.counts[1], &r.counts[2]}
	})
	if err != nil {
		return core.LimitedSummary{}, fmt.Errorf("counting messages held by limits: %w", err)
	}
	sum := core.LimitedSummary{ByLimit: map[string]int64{}}
	users := make([]core.LimitedUser, 0, len(rows))
	for _, r := range rows {
		r.u.ByLimit = map[string]int64{}
		for i, l := range limitNames {
			if r.counts[i] > 0 {
				sum.ByLimit[l] += r.counts[i]
				r.u.ByLimit[l] = r.counts[i]
			}
		}
		users = append(users, r.u)
	}
	slices.SortFunc(users, func(a, b core.LimitedUser) int {
		if c := cmp.Compare(b.Held, a.Held); c != 0 {
			return c
		}
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return cmp.Compare(a.ConversationID, b.ConversationID)
	})
	if top >= 0 && len(users) > top {
		users = users[:top]
	}
	sum.Users = users
	return sum, nil
}
