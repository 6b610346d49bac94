package core

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
func (d *Dispatcher) track(runID int64, cancel context.CancelCauseFunc) func() {
	d.mu.Lock()
	d.inflight[runID] = cancel
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		delete(d.inflight, runID)
		d.mu.Unlock()
	}
}

// stopRun cancels a run this process is executing, if it is; it reports
// whether it was.
func (d *Dispatcher) stopRun(runID int64) bool {
	d.mu.Lock()
	cancel, ok := d.inflight[runID]
	d.mu.Unlock()
	if ok {
		cancel(errStopRequested)
	}
	return ok
}

func (d *Dispatcher) inflightIDs() []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := make([]int64, 0, len(d.inflight))
	for id := range d.inflight {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// maintain keeps this process's running runs alive and the queue moving:
// every HeartbeatInterval it refreshes the heartbeat of the runs it executes
// (and stops those whose cancel another process requested, or that were
// taken from it), and every ReapInterval it fails runs whose heartbeat is
// older than StaleAfter (their process died) so that the run queued behind
// them can start.
func (d *Dispatcher) maintain(ctx context.Context) {
	defer close(d.maintDone)
	now := d.cfg.Clock.Now()
	nextBeat, nextReap := now.Add(d.cfg.HeartbeatInterval), now.Add(d.cfg.ReapInterval)
	for {
		next := nextBeat
		if nextReap.Before(next) {
			next = nextReap
		}
		timer := d.cfg.Clock.NewTimer(max(next.Sub(d.cfg.Clock.Now()), 0))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		now := d.cfg.Clock.Now()
		if !now.Before(nextBeat) {
			d.heartbeat(ctx, now)
			nextBeat = now.Add(d.cfg.HeartbeatInterval)
		}
		if !now.Before(nextReap) {
			d.reap(ctx, now)
			nextReap = now.Add(d.cfg.ReapInterval)
		}
	}
}

func (d *Dispatcher) heartbeat(ctx context.Context, now time.Time) {
	ids := d.inflightIDs()
	if len(ids) == 0 {
		return
	}
	stop, err := d.cfg.Store.HeartbeatRuns(ctx, d.cfg.Owner, now.UTC(), ids)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("heartbeating runs", "err", err)
		}
		return
	}
	for _, id := range stop {
		if d.stopRun(id) {
			d.log.Info("stopping a run: cancel requested or taken over", "run", id)
		}
	}
}

// reap fails stale runs; the queued runs behind them become claimable, and
// a lone user's turn among them is queued again (once).
func (d *Dispatcher) reap(ctx context.Context, now time.Time) {
	n, retried, err := d.cfg.Store.ReapStaleRuns(ctx, now.UTC(), now.Add(-d.cfg.StaleAfter).UTC())
	if err != nil {
		if ctx.Err() == nil {
			d.log.Error("reaping stale runs", "err", err)
		}
		return
	}
	if n > 0 {
		d.log.Warn("failed runs whose process stopped sending heartbeats", "count", n, "stale_after", d.cfg.StaleAfter,
			"user_turns_queued_again", retried)
		d.signal()
	}
}
