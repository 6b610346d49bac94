package turns

import (
	"context"
	"errors"
	"slices"
	"time"
)

// errStopRequested is the cause a turn's context is cancelled with when its
// run must stop: the user wrote during generation under the restart policy,
// or the run was reaped and is no longer this process's.
var errStopRequested = errors.New("run stopped: a newer message restarted the turn, or the run was taken over")

// track registers a turn's cancel func under its run id while it executes.
func (e *Engine) track(runID int64, cancel context.CancelCauseFunc) func() {
	e.mu.Lock()
	e.inflight[runID] = cancel
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		delete(e.inflight, runID)
		e.mu.Unlock()
	}
}

// stopRun cancels a run this process is executing, if it is; it reports
// whether it was.
func (e *Engine) stopRun(runID int64) bool {
	e.mu.Lock()
	cancel, ok := e.inflight[runID]
	e.mu.Unlock()
	if ok {
		cancel(errStopRequested)
	}
	return ok
}

func (e *Engine) inflightIDs() []int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]int64, 0, len(e.inflight))
	for id := range e.inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// maintainStep keeps this process's running runs alive and the queue
// moving: every HeartbeatInterval it refreshes the heartbeat of the runs
// it executes (and stops those whose cancel another process requested, or
// that were taken from it), and every ReapInterval it fails runs whose
// heartbeat is older than StaleAfter (their process died) so that the run
// queued behind them can start. It sleeps until the next of the two.
func (e *Engine) maintainStep(ctx context.Context) time.Duration {
	now := e.cfg.Clock.Now()
	if !now.Before(e.nextBeat) {
		e.heartbeat(ctx, now)
		e.nextBeat = now.Add(e.cfg.HeartbeatInterval)
	}
	if !now.Before(e.nextReap) {
		e.reap(ctx, now)
		e.nextReap = now.Add(e.cfg.ReapInterval)
	}
	next := min(e.nextBeat.Sub(e.cfg.Clock.Now()), e.nextReap.Sub(e.cfg.Clock.Now()))
	// A round that outlasted an interval runs again at once.
	return max(next, 0)
}

func (e *Engine) heartbeat(ctx context.Context, now time.Time) {
	ids := e.inflightIDs()
	if len(ids) == 0 {
		return
	}
	stop, err := e.cfg.Store.HeartbeatRuns(ctx, e.cfg.Owner, now.UTC(), ids)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("heartbeating runs", "err", err)
		}
		return
	}
	for _, id := range stop {
		if e.stopRun(id) {
			e.log.Info("stopping a run: cancel requested or taken over", "run", id)
		}
	}
}

// reap fails stale runs; the queued runs behind them become claimable, and
// a lone user's turn among them is queued again (once).
func (e *Engine) reap(ctx context.Context, now time.Time) {
	n, retried, err := e.cfg.Store.ReapStaleRuns(ctx, now.UTC(), now.Add(-e.cfg.StaleAfter).UTC())
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("reaping stale runs", "err", err)
		}
		return
	}
	if n > 0 {
		e.log.Warn("failed runs whose process stopped sending heartbeats", "count", n, "stale_after", e.cfg.StaleAfter,
			"user_turns_queued_again", retried)
		e.signal()
	}
}
