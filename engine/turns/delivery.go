package turns

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
)

// A turn's outbound message (its reply, a continuation, a failure notice)
// is stored as DeliverySending before the platform call and settled after
// it, in the run's completion. A process that dies in between leaves it
// sending; the reaper queues a turn for its conversation, and every run
// first sends such messages again with the same idempotency key
// (resendPending). So a crash loses no reply, and repeats one only where
// the platform cannot drop a repeated key: there each send holds a doubt
// slot (doubt.go) until its state is stored, at most
// scheduler.max_sends_in_doubt per platform and process, shared with
// scheduled messages. Discord's nonce drops the repeat when it comes
// within its window: at once when the process restarts (Start fails its
// dead predecessor's runs), after runs.stale_after when another replica
// takes over.

// resendPending sends again the conversation's messages that a dead
// process left sending, oldest first, each with its own idempotency key,
// and records each outcome at once. One older than scheduler.late_grace
// is given up. It reports whether there were any.
func (e *Engine) resendPending(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) (bool, error) {
	if !hasPending(t.History, t.Run.ID) {
		// The window is the cache's or the database's: a message it shows
		// sending may since have been sent, so only the database decides,
		// and only then is it asked.
		return false, nil
	}
	pending, err := e.cfg.Store.PendingDeliveries(ctx, t.Conversation.ID, t.Run.ID)
	if err != nil {
		return false, fmt.Errorf("reading unsent replies: %w", err)
	}
	now := e.cfg.Clock.Now().UTC()
	for _, m := range pending {
		if err := e.resendOne(ctx, log, t, a, &m, now); err != nil {
			return true, err
		}
		e.cfg.History.Replaced(t.Conversation.ID, m)
	}
	return len(pending) > 0, nil
}

// resendOne sends m again (or gives it up when too old) and records the
// outcome.
func (e *Engine) resendOne(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, m *core.Message, now time.Time) error {
	if late := now.Sub(m.CreatedAt); late > e.cfg.LateGrace {
		log.Warn("a reply left unsent by a stopped process is too old to send", "message", m.ID, "late_by", late)
		outbox.Settle(m, core.SendResult{}, fmt.Errorf("not sent again: %s old, past scheduler.late_grace", late.Round(time.Second)))
	} else {
		log.Info("sending again a reply a stopped process may not have sent", "message", m.ID)
		release, err := e.cfg.Outbox.Resend(ctx, a, t.Conversation, m)
		defer release() // once the outcome below is stored
		if err != nil && m.Delivery != core.DeliveryFailed {
			return err // no send slot came free
		}
		if err != nil {
			log.Error("sending again a reply left unsent", "message", m.ID, "err", err)
		}
	}
	if err := e.cfg.Store.SettleDelivery(context.WithoutCancel(ctx), *m); err != nil {
		return fmt.Errorf("recording the delivery of a reply left unsent: %w", err)
	}
	return nil
}

// hasPending reports whether the window shows a message sending that is
// not run's own.
func hasPending(history []core.Message, run int64) bool {
	for _, m := range history {
		if m.Delivery == core.DeliverySending && (m.RunID == nil || *m.RunID != run) {
			return true
		}
	}
	return false
}

// settleAlone stores the delivery of the messages that were stored before
// they were sent, when the run's completion could not: what was sent must
// not be sent again by the run's next owner.
func (e *Engine) settleAlone(ctx context.Context, log *slog.Logger, msgs []*core.Message, prestored []bool) {
	for i, m := range msgs {
		if !prestored[i] {
			continue
		}
		if err := e.cfg.Store.SettleDelivery(ctx, *m); err != nil {
			log.Error("recording a reply's delivery", "message", m.ID, "err", err)
		}
	}
}

// answeredKey marks a turn's reply (or its chosen silence) with the seq of
// the newest message the turn saw: a reply is stored after messages that
// came while it was being made, so its place does not say what it
// answered.
const answeredKey = "answered_seq"

// markAnswered notes in meta the newest message t answers; it returns meta.
func markAnswered(meta map[string]any, t *core.Turn) map[string]any {
	if n := len(t.History); n > 0 {
		meta[answeredKey] = t.History[n-1].Seq
	}
	return meta
}

// answeredAlready reports whether every user message in the window was
// seen by a turn that answered it: a run queued by a message that came
// while the turn before was claimed, and that this turn then read, has
// nothing left to answer. The store's reaper decides the same from the
// same marks (store's queries.unanswered): a reply that was dropped
// answered nothing, a message held by bot.limits waits for no answer.
func answeredAlready(history []core.Message) bool {
	var answered int64 = -1
	for _, m := range history {
		if m.Role != core.RoleAssistant || isCommandMessage(m) || m.Delivery == core.DeliveryDropped {
			continue
		}
		switch v := m.Metadata[answeredKey].(type) {
		case int64:
			answered = max(answered, v)
		case float64: // read back from JSON
			answered = max(answered, int64(v))
		}
	}
	if answered < 0 {
		return false
	}
	for _, m := range history {
		if m.Role == core.RoleUser && !isCommandMessage(m) && m.Metadata["limited"] == nil && m.Seq > answered {
			return false
		}
	}
	return true
}
