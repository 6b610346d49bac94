package turns

import (
	"context"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/loop"
)

// DefaultMaxTurns is how many turns a process has in flight at most by
// default: enough for thousands of users on a slow model, at a bounded
// cost in memory (about 60 KB a turn waiting on the model; BENCHMARKS.md,
// issue 20).
const DefaultMaxTurns = 4096

// claimStep is one round of the one claimer of this process: it claims
// due runs for the free turn slots and runs each in its own goroutine. One
// claimer means no claim is wasted on a run a sibling already took, which
// matters on SQLite where every claim queues for the single writer. Slots
// bound the turns in flight (MaxTurns); turns of different conversations
// run side by side, so one slow model call never holds up another
// conversation. With no slot free it sleeps until a turn gives one back
// (runFrom wakes it).
func (e *Engine) claimStep(ctx context.Context) time.Duration {
	if e.isStopping() || ctx.Err() != nil {
		return loop.Forever
	}
	// Claim for every free slot at once (up to claimBatch): hundreds of
	// users writing together are claimed in a few transactions, not one
	// each.
	free := 0
more:
	for free < claimBatch {
		select {
		case e.slots <- struct{}{}:
			free++
		default:
			break more
		}
	}
	if free == 0 {
		return loop.Forever
	}
	runs, err := e.cfg.Store.ClaimRuns(ctx, e.cfg.Owner, e.cfg.Clock.Now().UTC(), free, e.platforms...)
	if err != nil && ctx.Err() == nil {
		e.log.Error("claiming runs", "err", err)
	}
	for _, run := range runs {
		e.turns.Add(1)
		go e.runFrom(ctx, run, nil)
	}
	for range free - len(runs) {
		<-e.slots
	}
	switch {
	case err == nil && len(runs) == free:
		return 0 // there may be more due
	case err != nil:
		return e.cfg.PollInterval
	}
	// Fewer due than asked for: wait for the next.
	return e.idleWait(ctx)
}

// runFrom executes run in the turn slot it holds, then the runs each
// completion claims (a busy slot goes from run to run: completing one
// claims the next in the same transaction), then gives the slot back.
// conv is run's conversation when the caller has it read already.
func (e *Engine) runFrom(ctx context.Context, run *core.Run, conv *core.Conversation) {
	defer e.turns.Done()
	for next := run; next != nil; conv = nil {
		next = e.execute(ctx, next, conv)
	}
	<-e.slots
	// Its conversation may have a run queued behind it.
	e.signal()
}

// claimBatch bounds the runs one claim statement takes: enough to start a
// crowd's turns at once, few enough that SQLite's write lock is not held
// long.
const claimBatch = 64

// claimRetry is how soon an idle claim loop looks again when a run it
// could claim is due but its claim found none: another process's claim
// held that row (PostgreSQL skips locked rows), or the run fell due just
// after the claim looked.
const claimRetry = 5 * time.Millisecond

// idleWait is how long an idle claim loop sleeps: until the next run it
// could claim is due (a debounce ending), at most PollInterval (runs
// planned by other processes, when no notification says so). A run queued
// behind its conversation's running run is not waited for: whichever
// process runs that turn claims it as the turn completes.
func (e *Engine) idleWait(ctx context.Context) time.Duration {
	wait := e.cfg.PollInterval
	next, err := e.cfg.Store.NextRunAfter(ctx, e.platforms...)
	if err != nil || next == nil {
		return wait
	}
	until := next.Sub(e.cfg.Clock.Now())
	if until <= 0 {
		return min(claimRetry, wait)
	}
	return min(until, wait)
}
