package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// The owner's console: what happened across every conversation. Each
// query reads a range of one of the indexes of migration 10 (see there),
// so its cost follows the span or the page it reads (for a search, the
// matching messages), not the size of the tables.

// maxBuckets bounds the intervals Activity counts in one call.
const maxBuckets = 10000

// Marks in a message's metadata: a send that failed (the predicate of the
// partial index messages_undelivered, which a query must repeat word for
// word to use it), and a turn's chosen silence.
const (
	undeliveredMessage = `metadata LIKE '%"undelivered":%'`
	silentMessage      = `metadata LIKE '%"silent":true%'`
)

// Activity counts messages and finished runs per bucket from since
// (rounded down to the bucket, in UTC) to now, oldest first, with empty
// buckets present. Inbound counts user messages (chat commands included),
// Outbound the bot's messages (replies, scheduled messages, notices; a
// turn that chose silence said nothing and is not counted, an undelivered
// message is). Turns counts runs that finished in the bucket, failed or
// canceled ones included, skipped ones (which never called the model) not.
// bucket must be a whole number of seconds.
func (s *Console) Activity(ctx context.Context, since, now time.Time, bucket time.Duration) ([]core.ActivityBucket, error) {
	if bucket < time.Second || bucket%time.Second != 0 {
		return nil, fmt.Errorf("counting activity: the bucket %v is not a whole number of seconds", bucket)
	}
	start, now := since.UTC().Truncate(bucket), now.UTC()
	if now.Before(start) {
		return nil, nil
	}
	n := now.Sub(start)/bucket + 1
	if n > maxBuckets {
		return nil, fmt.Errorf("counting activity: %d buckets of %v (at most %d)", n, bucket, maxBuckets)
	}
	out := make([]core.ActivityBucket, n)
	for i := range out {
		out[i].Start = start.Add(time.Duration(i) * bucket)
	}
	secs, base := int64(bucket/time.Second), start.Unix()
	from, to := s.q.t(start), s.q.t(now)
	db := s.r.WithContext(ctx)
	add := func(what, q string, set func(b *core.ActivityBucket, x, y int64), scope ...any) error {
		rows, err := db.Raw(q, append([]any{base, secs, from, to}, scope...)...).Rows()
		if err != nil {
			return fmt.Errorf("counting %s: %w", what, err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var i, x, y int64
			if err := rows.Scan(&i, &x, &y); err != nil {
				return fmt.Errorf("counting %s: %w", what, err)
			}
			if i >= 0 && i < int64(len(out)) {
				set(&out[i], x, y)
			}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("counting %s: %w", what, err)
		}
		return nil
	}
	// messages_created holds both columns the count of a user message
	// needs; only the bot's messages are looked up, for the silence mark.
	// A bot's view looks up each message's conversation for its bot.
	mcond, margs := s.convBotCond(`messages`)
	err := add("messages", `SELECT b, SUM(CASE WHEN role = 'user' THEN 1 ELSE 0 END),
			SUM(CASE WHEN role = 'assistant' AND NOT (`+silentMessage+`) THEN 1 ELSE 0 END)
		FROM (SELECT `+s.bucketOf("created_at")+` AS b, role, metadata FROM messages
			WHERE created_at >= ? AND created_at <= ? AND role IN ('user', 'assistant')`+mcond+`) m
		GROUP BY b`, func(b *core.ActivityBucket, in, out int64) { b.Inbound, b.Outbound = in, out }, margs...)
	if err != nil {
		return nil, err
	}
	// runs_finished holds everything this reads.
	rcond, rargs := s.botCond(`bot_id`)
	err = add("turns", `SELECT b, COUNT(*), SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END)
		FROM (SELECT `+s.bucketOf("finished_at")+` AS b, status FROM runs
			WHERE finished_at >= ? AND finished_at <= ? AND status <> 'skipped'`+rcond+`) r
		GROUP BY b`, func(b *core.ActivityBucket, turns, failed int64) { b.Turns, b.Failed = turns, failed }, rargs...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bucketOf is the SQL of the bucket a time column falls in: its whole
// seconds since the epoch, less the first bucket's (the first argument),
// divided by the bucket's seconds (the second). SQLite reads the seconds
// of the fixed-width text without its fraction, which it would round.
func (s *Console) bucketOf(col string) string {
	if s.q.sqlite {
		return `(unixepoch(substr(` + col + `, 1, 19)) - ?) / ?`
	}
	return `(floor(extract(epoch FROM ` + col + `))::bigint - ?) / ?`
}

// RecentFailures lists what went wrong since since, newest first, at most
// limit: failed turns (runs that failed, with their error), failed sends
// (messages kept undelivered, with the send's error; a reply that could
// not be sent fails its turn too, so both are listed, with the same run)
// and failed jobs (with their last error).
func (s *Console) RecentFailures(ctx context.Context, since time.Time, limit int) ([]core.Failure, error) {
	if limit <= 0 {
		return nil, nil
	}
	db := s.r.WithContext(ctx)
	at := s.q.t(since)
	var out []core.Failure
	cond, botArgs := s.botCond(`bot_id`)
	mcond, mArgs := s.convBotCond(`messages`)
	args := func(scope []any) []any { return append(append([]any{at}, scope...), limit) }
	// Each kind is read newest first up to limit, then merged.
	turns, err := queryAll(db, `SELECT id, conversation_id, finished_at, error FROM runs
		WHERE status = 'failed' AND finished_at >= ?`+cond+` ORDER BY finished_at DESC, id DESC LIMIT ?`, args(botArgs),
		func(f *core.Failure) []any { return []any{&f.RunID, &f.ConversationID, timeCol{&f.At}, &f.Error} })
	if err != nil {
		return nil, fmt.Errorf("reading failed turns: %w", err)
	}
	for _, f := range turns {
		f.Kind = "turn"
		out = append(out, f)
	}
	type send struct {
		f    core.Failure
		meta map[string]any
	}
	sends, err := queryAll(db, `SELECT conversation_id, COALESCE(run_id, 0), created_at, metadata FROM messages
		WHERE `+undeliveredMessage+` AND created_at >= ?`+mcond+` ORDER BY created_at DESC, id DESC LIMIT ?`, args(mArgs),
		func(m *send) []any {
			return []any{&m.f.ConversationID, &m.f.RunID, timeCol{&m.f.At}, metadataCol{&m.meta}}
		})
	if err != nil {
		return nil, fmt.Errorf("reading failed sends: %w", err)
	}
	for _, m := range sends {
		why, ok := m.meta["undelivered"]
		if !ok {
			continue // the words were in a value, not the key
		}
		m.f.Kind = "send"
		if m.f.Error, ok = why.(string); !ok {
			m.f.Error = fmt.Sprint(why)
		}
		out = append(out, m.f)
	}
	jobs, err := queryAll(db, `SELECT id, conversation_id, updated_at, last_error FROM jobs
		WHERE status = 'failed' AND updated_at >= ?`+cond+` ORDER BY updated_at DESC, id DESC LIMIT ?`, args(botArgs),
		func(f *core.Failure) []any { return []any{&f.JobID, &f.ConversationID, timeCol{&f.At}, &f.Error} })
	if err != nil {
		return nil, fmt.Errorf("reading failed jobs: %w", err)
	}
	for _, f := range jobs {
		f.Kind = "job"
		out = append(out, f)
	}
	kindOrder := map[string]int{"turn": 0, "send": 1, "job": 2}
	slices.SortStableFunc(out, func(a, b core.Failure) int {
		if c := b.At.Compare(a.At); c != 0 {
			return c
		}
		return cmp.Compare(kindOrder[a.Kind], kindOrder[b.Kind])
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// tokenSlot is the interval TokensByDay sums in SQL before it puts them on
// days: every UTC offset and every DST change since 1980 is a multiple of a
// quarter of an hour, so no slot spans a midnight of any zone.
const tokenSlot = 15 * 60

// TokensByDay sums the prompt and completion tokens of runs finished since
// since, per day in loc (the first from since, 23 or 25 hours long across
// a DST change) and per model, oldest day first, models by name. Runs from
// before the store kept the model count as model "". Days and models with
// no tokens are left out. The database sums per model and quarter of an
// hour, from runs_finished's range; the quarters go on their days here.
func (s *Console) TokensByDay(ctx context.Context, since time.Time, loc *time.Location) ([]core.TokenDay, error) {
	if loc == nil {
		loc = time.UTC
	}
	base := since.Unix() - since.Unix()%tokenSlot
	if since.Unix() < 0 && since.Unix()%tokenSlot != 0 {
		base -= tokenSlot
	}
	type slot struct {
		i     int64
		model string
		p, c  int64
	}
	cond, botArgs := s.botCond(`bot_id`)
	slots, err := queryAll(s.r.WithContext(ctx), `SELECT b, model, SUM(prompt_tokens), SUM(completion_tokens)
		FROM (SELECT `+s.bucketOf("finished_at")+` AS b, model, prompt_tokens, completion_tokens FROM runs
			WHERE finished_at >= ?`+cond+`) r
		GROUP BY b, model`, append([]any{base, tokenSlot, s.q.t(since)}, botArgs...),
		func(v *slot) []any { return []any{&v.i, &v.model, &v.p, &v.c} })
	if err != nil {
		return nil, fmt.Errorf("summing tokens per day: %w", err)
	}
	type key struct{ day, model string }
	sums := map[key]*core.TokenDay{}
	var out []core.TokenDay
	for _, v := range slots {
		day := time.Unix(base+v.i*tokenSlot, 0).In(loc).Format(time.DateOnly)
		k := key{day, v.model}
		if sums[k] == nil {
			sums[k] = &core.TokenDay{Day: day, Model: v.model}
		}
		sums[k].Prompt += v.p
		sums[k].Completion += v.c
	}
	for _, d := range sums {
		if d.Prompt+d.Completion > 0 {
			out = append(out, *d)
		}
	}
	slices.SortFunc(out, func(a, b core.TokenDay) int {
		if c := cmp.Compare(a.Day, b.Day); c != 0 {
			return c
		}
		return cmp.Compare(a.Model, b.Model)
	})
	return out, nil
}

// jobFilter is the WHERE clause of f (without Limit, Offset and order),
// over jobs and, as c, their conversations.
func (s *dbs) jobFilter(f core.JobFilter) (string, []any) {
	q := s.q
	w := []string{"1 = 1"}
	var args []any
	if s.bot != "" {
		w = append(w, "jobs.bot_id = ?")
		args = append(args, s.bot)
	}
	if len(f.Statuses) > 0 {
		names := make([]string, len(f.Statuses))
		for i, st := range f.Statuses {
			names[i] = string(st)
		}
		w = append(w, "status IN ?")
		args = append(args, names)
	}
	if len(f.Kinds) > 0 {
		names := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			names[i] = string(k)
		}
		w = append(w, "kind IN ?")
		args = append(args, names)
	}
	if f.Platform != "" {
		w = append(w, "c.platform = ?")
		args = append(args, string(f.Platform))
	}
	if f.DueFrom != nil {
		w = append(w, "due_at >= ?")
		args = append(args, q.t(*f.DueFrom))
	}
	if f.DueTo != nil {
		w = append(w, "due_at < ?")
		args = append(args, q.t(*f.DueTo))
	}
	return strings.Join(w, " AND "), args
}

// JobsAcross lists the jobs of every conversation of the view's bot
// (AllBots: of every bot) that match f, each with
// its conversation's platform, display name and time zone: by due time,
// soonest first, or with f.Recent by the last change, newest first (ties
// by id). Limit <= 0 lists them all.
func (s *Console) JobsAcross(ctx context.Context, f core.JobFilter) ([]core.JobRow, error) {
	where, args := s.jobFilter(f)
	order := ` ORDER BY due_at, id`
	if f.Recent {
		order = ` ORDER BY updated_at DESC, id DESC`
	}
	limit := f.Limit
	if limit <= 0 {
		limit = math.MaxInt32
	}
	// The conversation's columns are renamed so that jobCols' names
	// (id, created_at, ...) stay the job's.
	q := `SELECT ` + jobCols + `, c.platform, c.display_name, c.time_zone, jobs.bot_id FROM jobs
		JOIN (SELECT id AS cid, platform, display_name, time_zone FROM conversations) c ON c.cid = jobs.conversation_id
		WHERE ` + where + order + ` LIMIT ? OFFSET ?`
	out, err := queryAll(s.r.WithContext(ctx), q, append(args, limit, max(f.Offset, 0)), func(r *core.JobRow) []any {
		return append(jobDest(&r.Job), strCol[core.Platform]{&r.Platform}, &r.DisplayName, &r.TimeZone, &r.BotID)
	})
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	return out, nil
}

// CountJobs counts the jobs that match f (its Limit, Offset and order
// aside).
func (s *Console) CountJobs(ctx context.Context, f core.JobFilter) (int64, error) {
	where, args := s.jobFilter(f)
	q := `SELECT COUNT(*) FROM jobs WHERE ` + where
	if f.Platform != "" {
		q = `SELECT COUNT(*) FROM jobs JOIN conversations c ON c.id = jobs.conversation_id WHERE ` + where
	}
	var n int64
	if err := s.r.WithContext(ctx).Raw(q, args...).Row().Scan(&n); err != nil {
		return 0, fmt.Errorf("counting jobs: %w", err)
	}
	return n, nil
}

// maxRetryNote bounds the last error a retried job keeps: a job retried
// again and again keeps the newest of its history.
const maxRetryNote = 2000

// RetryJob gives a failed job a new attempt: it becomes pending, due at
// now, its attempts counted from zero again, and its last error says who
// retried it and keeps what it had failed with. A job that does not exist
// is core.ErrNotFound; one that has not failed is returned unchanged, with
// an error wrapping core.ErrNotFailed.
func (s *Console) RetryJob(ctx context.Context, id int64, now time.Time, by string) (core.Job, error) {
	now = utc(now)
	var j core.Job
	err := s.write(ctx, func(tx *gorm.DB) error {
		err := tx.Raw(`SELECT `+jobCols+` FROM jobs WHERE id = ?`, id).Row().Scan(jobDest(&j)...)
		if err != nil {
			return err
		}
		if j.Status != core.JobFailed {
			return core.ErrNotFailed
		}
		note := fmt.Sprintf("retried by %s at %s; it had failed: %s", by, now.Format(time.RFC3339), j.LastError)
		if len(note) > maxRetryNote {
			note = strings.ToValidUTF8(note[:maxRetryNote], "") + "…"
		}
		t := s.q.t(now)
		res := tx.Exec(`UPDATE jobs SET status = 'pending', due_at = ?, attempts = 0, last_error = ?, owner = '',
				lease_until = NULL, retried_by = ?, retried_at = ?, updated_at = ?
			WHERE id = ? AND status = 'failed'`, t, note, by, t, t, id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return core.ErrNotFailed
		}
		j.Status, j.DueAt, j.Attempts, j.LastError, j.Owner, j.LeaseUntil, j.RetriedBy, j.RetriedAt, j.UpdatedAt =
			core.JobPending, now, 0, note, "", nil, by, &now, now
		return nil
	})
	switch {
	case errors.Is(err, core.ErrNotFailed):
		return j, fmt.Errorf("retrying job %d (%s): %w", id, j.Status, err)
	case errors.Is(err, sql.ErrNoRows):
		return core.Job{}, notFound(fmt.Sprintf("job %d", id), err)
	case err != nil:
		return core.Job{}, fmt.Errorf("retrying job %d: %w", id, err)
	}
	return j, nil
}

// likeEscaper escapes LIKE's wildcards (the escape is '\').
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// byActivity orders conversations as ConversationsByActivity does.
const byActivity = ` ORDER BY c.last_message_at IS NULL, c.last_message_at DESC, c.id DESC`

// ConversationTokens sums the prompt and completion tokens of a
// conversation's runs (0 for one without runs, or unknown).
func (s *Console) ConversationTokens(ctx context.Context, conversationID int64) (prompt, completion int64, err error) {
	err = row(s.r.WithContext(ctx), `SELECT COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM runs WHERE conversation_id = ?`, conversationID).Scan(&prompt, &completion)
	if err != nil {
		return 0, 0, fmt.Errorf("summing the tokens of conversation %d: %w", conversationID, err)
	}
	return prompt, completion, nil
}
