package engine

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
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
	if d.cfg.Listener != nil {
		ListenForWork(ctx, d.cfg.Listener, d.log, d.WakeFor)
	}
}

// ListenForWork hands wake what l reports until ctx ends, listening again
// after a failure (the claim and job loops poll meanwhile). A process with
// several bots listens once for all of them and wakes the bot each topic
// names.
func ListenForWork(ctx context.Context, l core.WorkListener, log *slog.Logger, wake func(topic string)) {
	wait := listenRetryMin
	for {
		started := time.Now()
		err := l.Listen(ctx, wake)
		if err == nil || ctx.Err() != nil {
			return
		}
		if time.Since(started) > listenRetryMax {
			wait = listenRetryMin // it had been listening fine
		}
		log.Warn("listening for other replicas' work failed; polling until it is back", "err", err, "retry_in", wait)
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

// WakeFor wakes the loop that serves topic: "runs" or "jobs", alone or
// with the bot the work is for ("runs:ada"); both for anything else.
func (d *Dispatcher) WakeFor(topic string) {
	table, _, _ := strings.Cut(topic, ":")
	switch table {
	case "runs":
		d.signal()
	case "jobs":
		d.wakeJobs()
	default:
		d.signal()
		d.wakeJobs()
	}
}
