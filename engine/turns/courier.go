package turns

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
)

// courier delivers a turn's messages through the Outbox, recorded before
// they are sent, keeps each run's doubt slots until its outcome is stored,
// and sends again what a stopped process left sending.
type courier struct {
	cfg *Config
	log *slog.Logger

	mu sync.Mutex
	// doubt are the doubt slots each run's sends hold until their
	// outcome is stored.
	doubt map[int64][]*outbox.Slot
}

func newCourier(cfg *Config) *courier {
	return &courier{cfg: cfg, log: cfg.Logger, doubt: map[int64][]*outbox.Slot{}}
}

// hold keeps a send's doubt slot with its run until releaseDoubt.
func (c *courier) hold(run int64, s *outbox.Slot) {
	if s == nil {
		return
	}
	c.mu.Lock()
	c.doubt[run] = append(c.doubt[run], s)
	c.mu.Unlock()
}

// releaseDoubt gives back the doubt slots a run's sends held, once their
// outcome is stored (or could not be).
func (c *courier) releaseDoubt(run int64) {
	c.mu.Lock()
	held := c.doubt[run]
	delete(c.doubt, run)
	c.mu.Unlock()
	for _, s := range held {
		s.Give()
	}
}

// deliver sends a turn's message through the Outbox, recorded first, and
// keeps its doubt slot with the run.
func (c *courier) deliver(ctx context.Context, a core.Adapter, t *core.Turn, msg *core.Message) error {
	slot, err := c.cfg.Outbox.Deliver(ctx, a, t.Conversation, t.Run.ID, msg)
	c.hold(t.Run.ID, slot)
	return err
}

// takeBackGrown deletes the messages a dead run's streamed reply left
// half written (handed to this run by the reaper, core.Run.Grown): the
// answer this turn gives, or the reply resent, replaces them. A delete
// that fails is logged and given up: a half answer left showing is
// better than a turn that never answers.
func (c *courier) takeBackGrown(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) {
	if len(t.Run.Grown) == 0 {
		return
	}
	log.Info("deleting the half written reply a stopped process left", "messages", len(t.Run.Grown))
	gone := core.Message{Metadata: map[string]any{}}
	outbox.NoteGrown(&gone, t.Run.Grown)
	if err := outbox.TakeBack(ctx, a, t.Conversation, gone); err != nil {
		log.Warn("deleting the half written reply a stopped process left", "err", err)
	}
	if err := c.cfg.Store.NoteGrown(ctx, t.Run.ID, c.cfg.Owner, nil); err != nil {
		log.Warn("recording the half written reply deleted", "err", err)
	}
}

// resendPending sends again the conversation's messages that a dead
// process left sending, oldest first, each with its own idempotency key,
// and records each outcome at once. One older than scheduler.late_grace
// is given up. It reports whether there were any.
func (c *courier) resendPending(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) (bool, error) {
	if !hasPending(t.History, t.Run.ID) {
		// The window is the cache's or the database's: a message it shows
		// sending may since have been sent, so only the database decides,
		// and only then is it asked.
		return false, nil
	}
	pending, err := c.cfg.Store.PendingDeliveries(ctx, t.Conversation.ID, t.Run.ID)
	if err != nil {
		return false, fmt.Errorf("reading unsent replies: %w", err)
	}
	now := c.cfg.Clock.Now().UTC()
	for _, m := range pending {
		if err := c.resendOne(ctx, log, t, a, &m, now); err != nil {
			return true, err
		}
		c.cfg.History.Replaced(t.Conversation.ID, m)
	}
	return len(pending) > 0, nil
}

// resendOne sends m again (or gives it up when too old) and records the
// outcome.
func (c *courier) resendOne(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter, m *core.Message, now time.Time) error {
	if late := now.Sub(m.CreatedAt); late > c.cfg.LateGrace {
		log.Warn("a reply left unsent by a stopped process is too old to send", "message", m.ID, "late_by", late)
		outbox.Settle(m, core.SendResult{}, fmt.Errorf("not sent again: %s old, past scheduler.late_grace", late.Round(time.Second)))
	} else {
		log.Info("sending again a reply a stopped process may not have sent", "message", m.ID)
		release, err := c.cfg.Outbox.Resend(ctx, a, t.Conversation, m)
		defer release() // once the outcome below is stored
		if err != nil && m.Delivery != core.DeliveryFailed {
			return err // no send slot came free
		}
		if err != nil {
			log.Error("sending again a reply left unsent", "message", m.ID, "err", err)
		}
	}
	if err := c.cfg.Store.SettleDelivery(context.WithoutCancel(ctx), *m); err != nil {
		return fmt.Errorf("recording the delivery of a reply left unsent: %w", err)
	}
	return nil
}

// settleAlone stores the delivery of the messages that were stored before
// they were sent, when the run's completion could not: what was sent must
// not be sent again by the run's next owner.
func (c *courier) settleAlone(ctx context.Context, log *slog.Logger, msgs []*core.Message, prestored []bool) {
	for i, m := range msgs {
		if !prestored[i] {
			continue
		}
		if err := c.cfg.Store.SettleDelivery(ctx, *m); err != nil {
			log.Error("recording a reply's delivery", "message", m.ID, "err", err)
		}
	}
}
