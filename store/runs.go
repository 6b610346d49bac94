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

// RunQueue is the runs: claiming the due ones, heartbeating and
// completing them (complete.go), reaping those whose process died
// (reap.go), and reading them. It is core.RunStore.
type RunQueue struct{ *dbs }

// ClaimRun marks the oldest due queued run (of the view's bot) whose
// conversation has no running run as running for owner, in one
// statement, and returns it; (nil, nil)
// when none is due. If a concurrent claimer took a run of the same
// conversation first (the runs_one_running index refuses the second), that
// too is "nothing claimed".
func (s *RunQueue) ClaimRun(ctx context.Context, owner string, now time.Time, platforms ...core.Platform) (*core.Run, error) {
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
func (s *RunQueue) anyDue(ctx context.Context, t any, platforms []string) (bool, error) {
	if !s.q.sqlite || s.r == s.w {
		return true, nil
	}
	var id int64
	q, args := s.q.probe(t, s.bot, platforms)
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
func (s *RunQueue) ClaimRuns(ctx context.Context, owner string, now time.Time, limit int, platforms ...core.Platform) ([]*core.Run, error) {
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
func (s *RunQueue) claimMany(tx *gorm.DB, owner string, t any, limit int, platforms []string) ([]*core.Run, error) {
	q, args := s.q.claimN(owner, t, limit, s.bot, platforms)
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
func (s *RunQueue) NextRunAfter(ctx context.Context, platforms ...core.Platform) (*time.Time, error) {
	var next *time.Time
	q, args := s.q.next(s.bot, platformNames(platforms))
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
func (s *RunQueue) HeartbeatRuns(ctx context.Context, owner string, now time.Time, runIDs []int64) ([]int64, error) {
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

// claimIn claims the next due run inside tx. On PostgreSQL a claim that
// loses a race trips runs_one_running, which would abort the whole
// transaction, so the claim gets a savepoint of its own.
func (s *RunQueue) claimIn(tx *gorm.DB, owner string, t any, platforms []string) (*core.Run, error) {
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

func (s *RunQueue) claimOnce(tx *gorm.DB, owner string, t any, platforms []string) (*core.Run, error) {
	if !s.q.sqlite {
		if err := tx.SavePoint("claim_next").Error; err != nil {
			return nil, fmt.Errorf("opening savepoint: %w", err)
		}
	}
	run := new(core.Run)
	q, args := s.q.claim(owner, t, s.bot, platforms)
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
func (s *RunQueue) skipIfStale(tx *gorm.DB, run *core.Run, t any) (bool, error) {
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

// Run returns a run by id.
func (s *RunQueue) Run(ctx context.Context, id int64) (core.Run, error) {
	var r core.Run
	err := s.r.WithContext(ctx).Raw(`SELECT `+runCols+` FROM runs WHERE id = ?`, id).Row().Scan(runDest(&r)...)
	if err != nil {
		return core.Run{}, notFound(fmt.Sprintf("run %d", id), err)
	}
	return r, nil
}

// Runs returns a conversation's runs by id.
func (s *RunQueue) Runs(ctx context.Context, conversationID int64) ([]core.Run, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+runCols+` FROM runs WHERE conversation_id = ? ORDER BY id`,
		[]any{conversationID}, runDest)
	if err != nil {
		return nil, fmt.Errorf("reading runs of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// HasPendingRuns reports whether any run of the view's bot is queued or
// running, on the given
// platforms' conversations when any are given (parley chat waits for its
// last answer before it exits).
func (s *RunQueue) HasPendingRuns(ctx context.Context, platforms ...core.Platform) (bool, error) {
	_, scope := runScope(s.bot, platformNames(platforms))
	sc := ""
	if s.bot != "" {
		sc += ` AND r.bot_id = ?`
	}
	if len(platforms) > 0 {
		sc += ` AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = r.conversation_id AND c.platform IN ?)`
	}
	// One probe per status, so that each walks its partial index
	// (runs_bot_queued_due or runs_queued_due, runs_one_running) and not
	// the whole table when nothing is pending.
	q := `SELECT EXISTS (SELECT 1 FROM runs r WHERE r.status = 'queued'` + sc + `)
		OR EXISTS (SELECT 1 FROM runs r WHERE r.status = 'running'` + sc + `)`
	args := append(append([]any(nil), scope...), scope...)
	var pending bool
	if err := row(s.r.WithContext(ctx), q, args...).Scan(&pending); err != nil {
		return false, fmt.Errorf("checking for pending runs: %w", err)
	}
	return pending, nil
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
