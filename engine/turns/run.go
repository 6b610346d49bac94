package turns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
)

// execute runs one claimed run to its end and records the outcome; it
// returns the next run it claimed while recording, if any. Nothing here may
// crash the process: every failure ends as a failed run.
func (e *Engine) execute(ctx context.Context, run *core.Run, conv *core.Conversation) (next *core.Run) {
	log := e.log.With("run", run.ID, "conversation", run.ConversationID, "kind", run.Kind)
	ctx, cancel := context.WithTimeout(ctx, e.cfg.TurnTimeout)
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	untrack := e.track(run.ID, stop)
	defer untrack()
	defer func() {
		if p := recover(); p != nil {
			log.Error("turn panicked", "panic", p)
			next, _ = e.complete(ctx, log, run, nil, core.RunCompletion{Status: core.RunFailed, Error: fmt.Sprintf("panic: %v", p)})
		}
	}()

	turn, adapter, err := e.speaker.prepare(ctx, run, conv)
	var skip skipRun
	if errors.As(err, &skip) {
		log.Info("run skipped", "why", skip.why)
		next, _ = e.complete(ctx, log, run, nil, core.RunCompletion{Status: core.RunSkipped, Error: skip.why})
		return next
	}
	if err != nil {
		log.Error("preparing turn", "err", err)
		next, _ = e.complete(ctx, log, run, nil, core.RunCompletion{Status: core.RunFailed, Error: err.Error()})
		return next
	}
	e.courier.takeBackGrown(ctx, log, turn, adapter)
	resent, err := e.courier.resendPending(ctx, log, turn, adapter)
	if err != nil {
		log.Error("sending again a reply left unsent", "err", err)
		next, _ = e.complete(ctx, log, run, nil, core.RunCompletion{Status: core.RunFailed, Error: err.Error()})
		return next
	}
	if run.Kind == core.RunUserTurn && answeredAlready(turn.History) {
		// The run was queued for the reply a stopped process left unsent,
		// which has just gone out, or for a message the turn before it
		// saw and answered (it came after that turn was claimed, before
		// it read the history): nothing waits for an answer.
		why := "nothing to answer: the turn before answered every message"
		if resent {
			why = "sent again the reply a stopped process left unsent; nothing more to answer"
		}
		log.Info("run skipped", "why", why)
		next, _ = e.complete(ctx, log, run, nil, core.RunCompletion{Status: core.RunSkipped, Error: why})
		return next
	}
	ack := e.speaker.acknowledge(ctx, log, turn, adapter)
	stopTyping := e.speaker.typing.Show(ctx, adapter, turn.Conversation.ChannelThreadID)
	outcome, completion := e.speaker.generate(ctx, log, turn, adapter)
	stopTyping()
	ack.takeBack(ctx)
	next, ok := e.complete(ctx, log, run, &turn.Conversation, completion)
	e.courier.releaseDoubt(turn.Run.ID)
	if ok {
		e.speaker.observe(ctx, turn, outcome)
	}
	return next
}

// complete stores the completion and, unless the engine is stopping,
// claims the next due run in the same transaction. It reports whether the
// run was still ours. conv, when known, gets the stored messages in its
// history cache.
//
// A completion the store cannot take now (core.ErrStoreUnavailable: a
// full disk, a database gone) is tried again with backoff until it lands
// or the engine stops: a run left running holds its conversation
// until the reaper (runs.stale_after), and the heartbeats keep it ours
// meanwhile. One the store refuses otherwise is tried a few times, then
// the run is recorded as failed without it, so that the conversation
// moves on all the same.
func (e *Engine) complete(ctx context.Context, log *slog.Logger, run *core.Run, conv *core.Conversation, c core.RunCompletion) (*core.Run, bool) {
	c.Now = e.cfg.Clock.Now().UTC()
	// Messages stored before they were sent get their delivery settled,
	// the others are appended.
	msgs := c.Messages
	prestored := make([]bool, len(c.Messages))
	for i, m := range c.Messages {
		prestored[i] = m.ID != 0
	}
	r := e.recordRetrying(ctx, log, run, c)
	next, err, c := r.next, r.err, r.c
	settle := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		e.courier.settleAlone(sctx, log, msgs, prestored)
	}
	switch {
	case errors.Is(err, core.ErrLostRun) && r.retried:
		log.Warn("run no longer ours after recording its outcome failed: it landed before the error, or the run was taken; outcome dropped")
		settle()
		return nil, false
	case errors.Is(err, core.ErrLostRun):
		log.Warn("run was taken from this worker before it finished; outcome dropped")
		settle()
		return nil, false
	case err != nil:
		log.Error("recording run outcome", "err", err)
		settle()
		return nil, false
	case r.bare:
		// The run is over, and its conversation moves on, but its
		// messages were not stored with it.
		settle()
		if run.StartedAt != nil {
			e.cfg.Metrics.TurnFinished(run.Kind, c.Status, c.Now.Sub(*run.StartedAt))
		}
		return next, false
	}
	if run.StartedAt != nil {
		e.cfg.Metrics.TurnFinished(run.Kind, c.Status, c.Now.Sub(*run.StartedAt))
	}
	if dueSoon(c.Jobs, c.Now, e.cfg.PollInterval) {
		e.cfg.JobWake.Wake() // due sooner than the job loop's next look
	}
	if conv != nil && len(c.Messages) > 0 {
		// One at a time: a message stored before it was sent has its seq
		// from then, and a user's message may have come between it and
		// the completion's own; the cache takes only what follows on.
		for _, m := range c.Messages {
			e.cfg.History.Appended(*conv, *m)
		}
	}
	log.Debug("run finished", "status", c.Status)
	return next, true
}

// recorded is how recording a run's completion ended.
type recorded struct {
	next *core.Run
	err  error
	// c is what was recorded: bare, the run as failed without its
	// messages. retried: it took more than one try.
	c       core.RunCompletion
	bare    bool
	retried bool
}

// recordRetrying records c until it lands (see complete), the run is
// lost, or the engine stops.
func (e *Engine) recordRetrying(ctx context.Context, log *slog.Logger, run *core.Run, c core.RunCompletion) recorded {
	var next *core.Run
	var err error
	wait, bare, attempt := completeRetryMin, false, 1
	for ; ; attempt++ {
		next, err = e.record(ctx, run, c)
		if err == nil || errors.Is(err, core.ErrLostRun) {
			break
		}
		storeDown := errors.Is(err, core.ErrStoreUnavailable) || errors.Is(err, context.DeadlineExceeded)
		if !storeDown && attempt >= completeAttempts {
			if bare {
				break
			}
			log.Error("recording run outcome failed; recording the run as failed without its messages", "err", err,
				"attempts", attempt)
			c = core.RunCompletion{Status: core.RunFailed, Error: "recording the outcome failed: " + err.Error(), Now: c.Now}
			bare, attempt, wait = true, 0, completeRetryMin
			continue
		}
		if attempt == 1 {
			log.Warn("recording run outcome failed; trying again until it lands", "err", err, "retry_in", wait)
		} else {
			log.Debug("recording run outcome failed again", "err", err, "attempt", attempt, "retry_in", wait)
		}
		if !e.pause(wait) {
			log.Error("the engine stopped before the run's outcome could be recorded; the run is failed by the reaper",
				"err", err, "attempts", attempt)
			break
		}
		wait = completeBackoff().Next(wait)
	}
	return recorded{next: next, err: err, c: c, bare: bare, retried: attempt > 1}
}

// Recording a run's outcome: tries of a completion the store refuses for
// another reason than being unavailable, and the backoff between tries.
const (
	completeAttempts = 3
	completeRetryMin = 200 * time.Millisecond
	completeRetryMax = 5 * time.Second
)

// record stores c once, and claims the next run unless the engine is
// stopping.
func (e *Engine) record(ctx context.Context, run *core.Run, c core.RunCompletion) (*core.Run, error) {
	// Record the outcome even if the turn's context has run out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if e.isStopping() {
		return nil, e.cfg.Store.CompleteRun(ctx, run.ID, e.cfg.Owner, c)
	}
	return e.cfg.Store.CompleteRunAndClaim(ctx, run.ID, e.cfg.Owner, c, e.platforms...)
}

// pause waits wait on the engine's clock; false when the engine
// stops meanwhile.
func (e *Engine) pause(wait time.Duration) bool {
	t := e.cfg.Clock.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-e.speaker.runCtx.Done():
		return false
	}
}

// dueSoon reports whether a job of jobs is due within poll of now: the job
// loop looks at least that often, so a later job (a check-in hours away,
// created by most turns) need not wake it; with a hundred bots, waking
// each one's loop after every turn cost a claim per turn.
func dueSoon(jobs []*core.Job, now time.Time, poll time.Duration) bool {
	for _, j := range jobs {
		if j.DueAt.Before(now.Add(poll)) {
			return true
		}
	}
	return false
}
