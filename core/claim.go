package core

import (
	"context"
	"time"
)

// claimLoop is the one claimer of this process: it claims a due run whenever
// a turn slot is free and runs it in its own goroutine. One claimer means no
// claim is wasted on a run a sibling already took, which matters on SQLite
// where every claim queues for the single writer. Slots bound how many
// turns run at once (runs.workers); turns of different conversations run
// side by side, so one slow model call never holds up another conversation.
func (d *Dispatcher) claimLoop(ctx context.Context) {
	defer close(d.loopDone)
	slots := make(chan struct{}, d.cfg.Workers)
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		if d.isStopping() {
			return
		}
		run, err := d.cfg.Store.ClaimRun(ctx, d.cfg.Owner, d.cfg.Clock.Now().UTC(), d.platforms...)
		if err != nil && ctx.Err() == nil {
			d.log.Error("claiming a run", "err", err)
		}
		if run != nil {
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
			continue
		}
		<-slots
		timer := d.cfg.Clock.NewTimer(d.idleWait(ctx))
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

// idleWait is how long an idle claim loop sleeps: until the next queued run
// is due (a debounce ending), at most PollInterval (runs planned by other
// processes).
func (d *Dispatcher) idleWait(ctx context.Context) time.Duration {
	wait := d.cfg.PollInterval
	next, err := d.cfg.Store.NextRunAfter(ctx)
	if err != nil || next == nil {
		return wait
	}
	// A due run that could not be claimed waits for its conversation's
	// running run; that turn signals when it finishes.
	if until := next.Sub(d.cfg.Clock.Now()); until > 0 && until < wait {
		wait = until
	}
	return wait
}
