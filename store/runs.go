package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// ClaimRun marks the oldest due queued run whose conversation has no running
// run as running for owner, in one statement, and returns it; (nil, nil)
// when none is due. If a concurrent claimer took a run of the same
// conversation first (the runs_one_running index refuses the second), that
// too is "nothing claimed".
func (s *Store) ClaimRun(ctx context.Context, owner string, now time.Time, platforms ...core.Platform) (*core.Run, error) {
	t := s.q.t(now)
	ps := platformNames(platforms)
	if due, err := s.anyDue(ctx, t, ps); !due || err != nil {
		return nil, err
	}
	var run *core.Run
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		run, err = s.claimIn(tx, owner, t, ps)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claiming run: %w", err)
	}
	return run, nil
}

// anyDue reports whether a claim at t could take a run. SQLite has one
// writer and most claims of an idle loop find nothing, so it looks on a
// reader first and the write lock is taken only to claim; elsewhere (and
// on a single-connection SQLite) it says yes and the claim looks.
func (s *Store) anyDue(ctx context.Context, t any, platforms []string) (bool, error) {
	if !s.q.sqlite || s.r == s.w {
		return true, nil
	}
	var id int64
	q, args := s.q.probe(t, platforms)
	err := readRow(ctx, s.r, q, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking for a due run: %w", err)
	}
	return true, nil
}

// ClaimRuns is ClaimRun up to limit times, in one statement (claimMany): an
// idle process with room for many turns (hundreds of users writing at
// once) pays one commit for many claims instead of one each. It returns
// the runs claimed, fewer than limit when fewer were due.
func (s *Store) ClaimRuns(ctx context.Context, owner string, now time.Time, limit int, platforms ...core.Platform) ([]*core.Run, error) {
	if limit <= 1 {
		run, err := s.ClaimRun(ctx, owner, now, platforms...)
		if run == nil || err != nil {
			return nil, err
		}
		return []*core.Run{run}, nil
	}
	t := s.q.t(now)
	ps := platformNames(platforms)
	if due, err := s.anyDue(ctx, t, ps); !due || err != nil {
		return nil, err
	}
	var runs []*core.Run
	err := s.write(ctx, func(tx *gorm.DB) error {
		runs = runs[:0] // a batch may run this again after a rollback
		claimed, err := s.claimMany(tx, owner, t, limit, ps)
		if err != nil {
			return err
		}
		for _, run := range claimed {
			stale, err := s.skipIfStale(tx, run, t)
			if err != nil {
				return err
			}
			if !stale {
				runs = append(runs, run)
			}
		}
		return nil
	})
	if errors.Is(err, errLostClaim) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claiming runs: %w", err)
	}
	return runs, nil
}

// errLostClaim rolls back a claim that lost a race with another claimer.
var errLostClaim = errors.New("a concurrent claimer took a run of the same conversation")

// claimMany claims up to limit due runs in one statement, oldest first. A
// concurrent claimer that took a run of one of their conversations first
// (the runs_one_running index refuses the second) makes it fail with
// errLostClaim, for the caller to roll back and claim none: tx holds
// nothing else, so it needs no savepoint (a round trip on PostgreSQL).
func (s *Store) claimMany(tx *gorm.DB, owner string, t any, limit int, platforms []string) ([]*core.Run, error) {
	q, args := s.q.claimN(owner, t, limit, platforms)
	rows, err := query(tx, q, args...)
	if err != nil {
		return claimFailed(err)
	}
	defer rows.Close()
	var runs []*core.Run
	for rows.Next() {
		run := new(core.Run)
		if err := rows.Scan(runDest(run)...); err != nil {
			return nil, fmt.Errorf("reading a claimed run: %w", err)
		}
		runs = append(runs, run)
	}
	if err := rows.Err(); err != nil {
		return claimFailed(err)
	}
	// RETURNING keeps no order: the oldest first, as ClaimRun takes them.
	slices.SortFunc(runs, func(a, b *core.Run) int {
		if c := a.RunAfter.Compare(b.RunAfter); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return runs, nil
}

// claimFailed turns a claim that lost a race (a unique violation) into
// errLostClaim.
func claimFailed(err error) ([]*core.Run, error) {
	if isUniqueViolation(err) {
		return nil, errLostClaim
	}
	return nil, err
}

// NextRunAfter is the earliest RunAfter of a queued run a claim could take
// once due (nothing running in its conversation; on one of platforms when
// any are given), nil if none; the dispatcher sleeps until then. It walks
// runs_queued_due in order and stops at the first such run.
func (s *Store) NextRunAfter(ctx context.Context, platforms ...core.Platform) (*time.Time, error) {
	var next *time.Time
	q, args := s.q.next(platformNames(platforms))
	err := readRow(ctx, s.r, q, args...).Scan(nullTimeCol{&next})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading next run time: %w", err)
	}
	return next, nil
}

// HeartbeatRuns refreshes, in one statement, the heartbeat of those of
// runIDs that owner still holds as running, and returns the ids whose work
// must stop: a cancel was requested (runs.during_generation: restart), or
// owner no longer holds the run (it was reaped).
func (s *Store) HeartbeatRuns(ctx context.Context, owner string, now time.Time, runIDs []int64) ([]int64, error) {
	if len(runIDs) == 0 {
		return nil, nil
	}
	t := s.q.t(now)
	var kept []struct {
		ID       int64
		Canceled bool
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		kept = kept[:0] // a batch may run this again after a rollback
		return tx.Raw(`UPDATE runs SET heartbeat_at = ?, updated_at = ?
			WHERE id IN ? AND status = 'running' AND owner = ?
			RETURNING id, cancel_requested_at IS NOT NULL AS canceled`, t, t, runIDs, owner).Scan(&kept).Error
	})
	if err != nil {
		return nil, fmt.Errorf("heartbeating runs: %w", err)
	}
	held := make(map[int64]bool, len(kept))
	var stop []int64
	for _, k := range kept {
		held[k.ID] = true
		if k.Canceled {
			stop = append(stop, k.ID)
		}
	}
	for _, id := range runIDs {
		if !held[id] {
			stop = append(stop, id)
		}
	}
	return stop, nil
}

// finishRun ends a run only while owner still holds it as running.
const finishRun = `UPDATE runs SET status = ?, error = ?, finished_at = ?, record = ?,
		prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, model = ?, updated_at = ?
	WHERE id = ? AND status = 'running' AND owner = ?
	RETURNING conversation_id, job_id`

// CompleteRun finishes a run owner still holds as running and appends
// c.Messages with fresh seqs and RunID set, in one transaction. It fills
// each message's ID, ConversationID, Seq, RunID and CreatedAt (c.Now when
// zero) once committed. If the run is no longer running for owner it returns
// core.ErrLostRun and writes nothing.
func (s *Store) CompleteRun(ctx context.Context, runID int64, owner string, c core.RunCompletion) error {
	_, err := s.completeRun(ctx, runID, owner, c, false, nil)
	return err
}

// CompleteRunAndClaim is CompleteRun followed, in the same transaction, by
// ClaimRun for owner at c.Now: a busy worker goes from one run to the next
// with one write transaction instead of two. The next run is nil when none
// is due; a failure to complete claims nothing.
func (s *Store) CompleteRunAndClaim(ctx context.Context, runID int64, owner string, c core.RunCompletion, platforms ...core.Platform) (*core.Run, error) {
	return s.completeRun(ctx, runID, owner, c, true, platformNames(platforms))
}

func platformNames(ps []core.Platform) []string {
	if len(ps) == 0 {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

func (s *Store) completeRun(ctx context.Context, runID int64, owner string, c core.RunCompletion, claimNext bool, platforms []string) (*core.Run, error) {
	next, err := s.finish(ctx, runID, owner, c, claimNext, platforms)
	if err != nil {
		return nil, fmt.Errorf("completing run %d: %w", runID, err)
	}
	return next, nil
}

func (s *Store) finish(ctx context.Context, runID int64, owner string, c core.RunCompletion, claimNext bool, platforms []string) (*core.Run, error) {
	switch c.Status {
	case core.RunSucceeded, core.RunFailed, core.RunCanceled, core.RunSkipped:
	default:
		return nil, fmt.Errorf("status %q is not final", c.Status)
	}
	if c.Now.IsZero() {
		c.Now = s.now()
	}
	record, err := encodeRecord(c.Record)
	if err != nil {
		return nil, err
	}
	// Work on copies so a failed transaction leaves the caller's messages
	// untouched.
	msgs := make([]core.Message, len(c.Messages))
	metas := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		msgs[i] = *m
		if msgs[i].CreatedAt.IsZero() {
			msgs[i].CreatedAt = c.Now
		}
		msgs[i].CreatedAt = utc(msgs[i].CreatedAt)
		id := runID
		msgs[i].RunID = &id
		if metas[i], err = encodeMetadata(m.Metadata); err != nil {
			return nil, err
		}
	}
	jobs := make([]core.Job, len(c.Jobs))
	for i, j := range c.Jobs {
		jobs[i] = *j
	}
	now := s.q.t(c.Now)
	var next *core.Run
	err = s.write(ctx, func(tx *gorm.DB) error {
		next = nil // a batch may run this again after a rollback
		var convID int64
		var jobID sql.NullInt64
		err := row(tx, finishRun, string(c.Status), c.Error, now, record, c.PromptTokens, c.CompletionTokens,
			c.TotalTokens, c.Model, now, runID, owner).Scan(&convID, &jobID)
		if errors.Is(err, sql.ErrNoRows) {
			return core.ErrLostRun
		}
		if err != nil {
			return fmt.Errorf("finishing run: %w", err)
		}
		var lastSeq int64
		fresh := 0
		for i := range msgs {
			if msgs[i].ID != 0 {
				// Stored before it was sent: only its delivery is new.
				if err := settleDelivery(tx, &msgs[i], metas[i]); err != nil {
					return err
				}
				continue
			}
			fresh++
		}
		if fresh > 0 {
			seq, record, err := reserveSeqs(tx, convID, fresh, now)
			if err != nil {
				return err
			}
			for i := range msgs {
				if c.Messages[i].ID != 0 {
					continue
				}
				msgs[i].ConversationID = convID
				msgs[i].Seq = seq
				seq++
				if msgs[i].SessionRecordID == nil {
					msgs[i].SessionRecordID = record
				}
				if err := s.insertMessage(tx, &msgs[i], metas[i], s.q.t(msgs[i].CreatedAt)); err != nil {
					return err
				}
			}
			lastSeq = seq - 1
		}
		if len(jobs) > 0 {
			if lastSeq == 0 {
				if err := tx.Raw(`SELECT last_seq FROM conversations WHERE id = ?`, convID).Row().Scan(&lastSeq); err != nil {
					return fmt.Errorf("reading the conversation's last seq: %w", err)
				}
			}
			if err := s.insertJobs(tx, convID, lastSeq, jobs, now); err != nil {
				return err
			}
		}
		if jobID.Valid && c.JobOutcome != nil {
			sentID := ""
			if len(msgs) > 0 {
				sentID = msgs[0].PlatformMessageID
			}
			if err := s.settleJob(tx, jobID.Int64, c.JobOutcome, sentID, now); err != nil {
				return err
			}
		}
		if claimNext {
			next, err = s.claimIn(tx, owner, now, platforms)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, m := range c.Messages {
		*m = msgs[i]
	}
	for i, j := range c.Jobs {
		*j = jobs[i]
	}
	return next, nil
}

// claimIn claims the next due run inside tx. On PostgreSQL a claim that
// loses a race trips runs_one_running, which would abort the whole
// transaction, so the claim gets a savepoint of its own.
func (s *Store) claimIn(tx *gorm.DB, owner string, t any, platforms []string) (*core.Run, error) {
	// Each stale run skipped costs a round; the bound only guards against a
	// pathological backlog holding the write lock for long.
	for range 100 {
		run, err := s.claimOnce(tx, owner, t, platforms)
		if err != nil || run == nil {
			return run, err
		}
		stale, err := s.skipIfStale(tx, run, t)
		if err != nil {
			return nil, err
		}
		if !stale {
			return run, nil
		}
	}
	return nil, nil
}

func (s *Store) claimOnce(tx *gorm.DB, owner string, t any, platforms []string) (*core.Run, error) {
	if !s.q.sqlite {
		if err := tx.SavePoint("claim_next").Error; err != nil {
			return nil, fmt.Errorf("opening savepoint: %w", err)
		}
	}
	run := new(core.Run)
	q, args := s.q.claim(owner, t, platforms)
	err := row(tx, q, args...).Scan(runDest(run)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case isUniqueViolation(err):
		if s.q.sqlite {
			return nil, nil
		}
		if err := tx.RollbackTo("claim_next").Error; err != nil {
			return nil, fmt.Errorf("rolling back savepoint: %w", err)
		}
		return nil, nil
	case err != nil:
		return nil, err
	}
	return run, nil
}

// skipIfStale marks a just-claimed proactive or continue run skipped when
// its conversation has moved on since it was planned: such a run speaks
// only if the newest message is still the one it expected. User turns
// answer the newest message by construction, and cron turns are deferred,
// never skipped.
func (s *Store) skipIfStale(tx *gorm.DB, run *core.Run, t any) (bool, error) {
	if run.Kind != core.RunProactive && run.Kind != core.RunContinue {
		return false, nil
	}
	var newest sql.NullInt64
	// A chat command and its answer are not the conversation moving on:
	// the model was not asked, and nothing it said was answered.
	err := tx.Raw(`SELECT id FROM messages WHERE conversation_id = ? AND source <> 'command' ORDER BY seq DESC LIMIT 1`, run.ConversationID).
		Row().Scan(&newest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("reading the newest message: %w", err)
	}
	expected := run.ExpectedLastMessageID
	if expected != nil && newest.Valid && newest.Int64 == *expected {
		return false, nil
	}
	if err := tx.Exec(`UPDATE runs SET status = 'skipped', finished_at = ?, updated_at = ?,
		error = 'skipped: the conversation moved on since the run was planned'
		WHERE id = ?`, t, t, run.ID).Error; err != nil {
		return false, fmt.Errorf("skipping stale run %d: %w", run.ID, err)
	}
	if run.JobID != nil {
		// A proactive follow-up that would no longer fit is dropped.
		if err := s.settleJob(tx, *run.JobID, &core.JobOutcome{Status: core.JobCancelled,
			Error: "dropped: the conversation moved on before the follow-up ran"}, "", t); err != nil {
			return false, err
		}
	}
	return true, nil
}

// maxDeadTurns is how many times a turn for one message may die with its
// process before the message is given up: a message that crashes every
// process that answers it must not crash them for ever.
const maxDeadTurns = 3

// ReapStaleRuns fails running runs whose heartbeat is older than before:
// their process died (or hangs), and the queued run behind each becomes
// claimable. A conversation left with a user message no reply answered
// (by answered_seq) and no run queued has a user turn queued again, up
// to maxDeadTurns deaths for one message. A dead run that left a reply
// sending has a user turn queued too: it sends the reply again first
// (core.Store.PendingDeliveries).
// now is the caller's time (a run queued again is due then). It
// returns how many runs were failed and how many of them were queued
// again.
func (s *Store) ReapStaleRuns(ctx context.Context, now, before time.Time) (reaped, retried int, err error) {
	at := s.q.t(now)
	reaped, retried, err = s.reap(ctx, now, s.q.reapStale, at, at, s.q.t(before))
	if err != nil {
		return 0, 0, fmt.Errorf("reaping stale runs: %w", err)
	}
	return reaped, retried, nil
}

// ReapRunsOf is ReapStaleRuns for the runs owner holds, whatever their
// heartbeat: the caller knows that process is gone (a restarted process
// finds its predecessor's runs on the same host).
func (s *Store) ReapRunsOf(ctx context.Context, now time.Time, owner string) (reaped, retried int, err error) {
	at := s.q.t(now)
	reaped, retried, err = s.reap(ctx, now, `UPDATE runs SET status = 'failed', error = 'stale: its process is gone',
		finished_at = ?, updated_at = ? WHERE status = 'running' AND owner = ?
		RETURNING id, conversation_id, kind, trigger_message_id`, at, at, owner)
	if err != nil {
		return 0, 0, fmt.Errorf("reaping the runs of %s: %w", owner, err)
	}
	return reaped, retried, nil
}

// RunningOwners returns the owners of running runs.
func (s *Store) RunningOwners(ctx context.Context) ([]string, error) {
	var owners []string
	if err := s.r.WithContext(ctx).Raw(`SELECT DISTINCT owner FROM runs WHERE status = 'running'`).Scan(&owners).Error; err != nil {
		return nil, fmt.Errorf("reading running runs' owners: %w", err)
	}
	return owners, nil
}

// reap fails the running runs that failQuery (UPDATE … RETURNING id,
// conversation_id, kind, trigger_message_id) picks, and queues again what
// should be answered (see ReapStaleRuns).
func (s *Store) reap(ctx context.Context, now time.Time, failQuery string, args ...any) (reaped, retried int, err error) {
	at := s.q.t(now)
	type dead struct {
		id, conv int64
		kind     string
		trigger  *int64
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		reaped, retried = 0, 0
		rows, err := tx.Raw(failQuery, args...).Rows()
		if err != nil {
			return err
		}
		var runs []dead
		for rows.Next() {
			var r dead
			if err := rows.Scan(&r.id, &r.conv, &r.kind, &r.trigger); err != nil {
				rows.Close()
				return err
			}
			runs = append(runs, r)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		reaped = len(runs)
		for _, r := range runs {
			// A reply the dead run stored but may not have sent: a run of
			// its conversation sends it again before anything else
			// (core/delivery.go), and says nothing more if nobody wrote
			// since.
			res := tx.Exec(`INSERT INTO runs (conversation_id, kind, status, trigger_message_id, run_after, created_at, updated_at)
				SELECT ?, 'user_turn', 'queued', ?, ?, ?, ?
				WHERE EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = ? AND m.run_id = ? AND m.delivery = 'sending')
				ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING`,
				r.conv, r.trigger, at, at, at, r.conv, r.id)
			if res.Error != nil {
				return fmt.Errorf("queuing run %d's unsent reply: %w", r.id, res.Error)
			}
			if res.RowsAffected > 0 {
				retried++
				continue
			}
			// A user message no reply answered, with no run queued behind
			// it: a turn answers it again (its model call may have been
			// made; its reply never stored). Whether anything waits is
			// read from the replies' answered_seq, never from their place.
			trigger := r.trigger
			if r.kind != string(core.RunUserTurn) || trigger == nil {
				if err := row(tx, `SELECT max(id) FROM messages WHERE conversation_id = ? AND role = 'user' AND source <> 'command'`,
					r.conv).Scan(nullIDCol{&trigger}); err != nil {
					return fmt.Errorf("reading run %d's conversation: %w", r.id, err)
				}
				if trigger == nil {
					continue
				}
			}
			// A turn that took its process down maxDeadTurns times (a
			// message that crashes it) is not tried again.
			res = tx.Exec(`INSERT INTO runs (conversation_id, kind, status, trigger_message_id, run_after, created_at, updated_at)
				SELECT ?, 'user_turn', 'queued', ?, ?, ?, ?
				WHERE (SELECT count(*) FROM runs p WHERE p.conversation_id = ? AND p.trigger_message_id = ?
				                    AND p.status = 'failed' AND p.error LIKE 'stale:%') < ?
				  AND `+s.q.unanswered+`
				ON CONFLICT (conversation_id) WHERE status = 'queued' DO NOTHING`,
				r.conv, *trigger, at, at, at, r.conv, *trigger, maxDeadTurns, r.conv, r.conv)
			if res.Error != nil {
				return fmt.Errorf("queuing run %d's turn again: %w", r.id, res.Error)
			}
			retried += int(res.RowsAffected)
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return reaped, retried, nil
}

// Run returns a run by id.
func (s *Store) Run(ctx context.Context, id int64) (core.Run, error) {
	var r core.Run
	err := s.r.WithContext(ctx).Raw(`SELECT `+runCols+` FROM runs WHERE id = ?`, id).Row().Scan(runDest(&r)...)
	if err != nil {
		return core.Run{}, notFound(fmt.Sprintf("run %d", id), err)
	}
	return r, nil
}

// Runs returns a conversation's runs by id.
func (s *Store) Runs(ctx context.Context, conversationID int64) ([]core.Run, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+runCols+` FROM runs WHERE conversation_id = ? ORDER BY id`,
		[]any{conversationID}, runDest)
	if err != nil {
		return nil, fmt.Errorf("reading runs of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// HasPendingRuns reports whether any run is queued or running, on the given
// platforms' conversations when any are given (parley chat waits for its
// last answer before it exits).
func (s *Store) HasPendingRuns(ctx context.Context, platforms ...core.Platform) (bool, error) {
	q := `SELECT EXISTS (SELECT 1 FROM runs r WHERE r.status IN ('queued', 'running')`
	var args []any
	if ps := platformNames(platforms); len(ps) > 0 {
		q += ` AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = r.conversation_id AND c.platform IN ?)`
		args = append(args, ps)
	}
	q += `)`
	var pending bool
	if err := row(s.r.WithContext(ctx), q, args...).Scan(&pending); err != nil {
		return false, fmt.Errorf("checking for pending runs: %w", err)
	}
	return pending, nil
}
