package engine

import (
	"context"
	"time"
)

// Listening backoff: how long to wait before listening again after the
// connection failed (the claim and job loops poll meanwhile).
const (
	listenRetryMin = time.Second
	listenRetryMax = 30 * time.Second
)

// listen wakes the claim loop and the job loop when the Listener reports
// work that another process queued, until ctx ends.
func (d *Dispatcher) listen(ctx context.Context) {
	defer close(d.listenDone)
	if d.cfg.Listener == nil {
		return
	}
	wait := listenRetryMin
	for {
		started := time.Now()
		err := d.cfg.Listener.Listen(ctx, d.wakeFor)
		if err == nil || ctx.Err() != nil {
			return
		}
		if time.Since(started) > listenRetryMax {
			wait = listenRetryMin // it had been listening fine
		}
		d.log.Warn("listening for other replicas' work failed; polling until it is back", "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = listenBackoff().Next(wait)
	}
}

// wakeFor wakes the loop that serves topic ("runs" or "jobs"; both for
// anything else).
func (d *Dispatcher) wakeFor(topic string) {
	switch topic {
	case "runs":
		d.signal()
	case "jobs":
		d.wakeJobs()
	default:
		d.signal()
		d.wakeJobs()
	}
}
