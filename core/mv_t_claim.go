package core

import (
	"context"
	"time"
)

// DefaultMaxTurns is how many turns a process has in flight at most by
// default: enough for thousands of users on a slow model, at a bounded
// cost in memory (about 60 KB a turn waiting on the model; BENCHMARKS.md,
// issue 20).
const DefaultMaxTurns = 4096

// claimLoop is the one claimer of this process: it claims a due run whenever
// a turn slot is free and runs it in its own goroutine. One claimer means no
// claim is wasted on a run a sibling already took, which matters on SQLite
// where every claim queues for the single writer. Slots bound the turns in
// flight (MaxTurns); turns of different conversations run side by side, so
// one slow model call never holds up another conversation.
func (d *Dispatcher) claimLoop(ctx context.Context) {
	defer close(d.loopDone)
	slots := make(chan struct{}, d.cfg.MaxTurns)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if d.isStopping() {
			return
		}
		// Claim for every free slot at once (up to claimBatch): hundreds
		// of users writing together are claimed in a few transactions,
		// not one each.
		free := 1
	more:
		for free < claimBatch {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break more
			}
		}
		runs, err := d.cfg.Store.ClaimRuns(ctx, d.cfg.Owner, d.cfg.Clock.Now().UTC(), free, d.platforms...)
		if err != nil && ctx.Err() == nil {
			d.log.Error("claiming runs", "err", err)
		}
		for _, run := range runs {
			d.turns.Add(1)
			go func() {
				defer d.turns.Done()
				// A busy slot goes from run to run: completing one claims
				// the next in the same transaction.
				for next := run; next != nil; {
					next = d.execute(ctx, next)
				}
				<-slots
				// Its conversation may have a run queued behind it.
				d.signal()
			}()
		}
		for range free - len(runs) {
			<-slots
		}
		if err == nil && len(runs) == free {
			continue // there may be more due
		}
		// Fewer due than asked for: wait for the next.
		wait := d.cfg.PollInterval
		if err == nil {
			wait = d.idleWait(ctx)
		}
		timer := d.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-d.wake:
		case <-timer.C():
		}
		timer.Stop()
	}
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
func (d *Dispatcher) idleWait(ctx context.Context) time.Duration {
	wait := d.cfg.PollInterval
	next, err := d.cfg.Store.NextRunAfter(ctx, d.platforms...)
	if err != nil || next == nil {
		return wait
	}
	until := next.Sub(d.cfg.Clock.Now())
	if until <= 0 {
		return min(claimRetry, wait)
	}
	return min(until, wait)
}
