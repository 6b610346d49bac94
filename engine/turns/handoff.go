package turns

import (
	"github.com/parleybot/parley/core"
)

// A message whose turn is due at once (no debounce) need not wait for the
// claim loop: intake reserves a turn slot, the store claims the run in the
// message's own transaction (core.InboundRecord.ClaimFor), and the turn
// starts with the conversation as that transaction left it. That saves a
// turn the claim's probe, its write transaction, the next-due read after
// it and the conversation's read (BENCHMARKS.md, issue 31).

// Handoff is the engine as intake hands it a message's turn.
type Handoff struct{ e *Engine }

// Handoff returns the engine's side of intake's handoff.
func (e *Engine) Handoff() Handoff { return Handoff{e} }

// ReserveTurn takes a free turn slot for a run intake is about to record,
// and returns the owner to claim it for; false when none is free or the
// engine is not running. A reservation ends with RunClaimed or ReleaseTurn.
func (h Handoff) ReserveTurn() (owner string, ok bool) {
	e := h.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started || e.stopping {
		return "", false
	}
	select {
	case e.slots <- struct{}{}:
		e.turns.Add(1) // under mu: Drain's Wait never races it
		return e.cfg.Owner, true
	default:
		return "", false
	}
}

// RunClaimed executes run, claimed for this engine's owner in the slot
// ReserveTurn took, with conv its conversation as the claim left it.
func (h Handoff) RunClaimed(run *core.Run, conv core.Conversation) {
	go h.e.runFrom(h.e.speaker.runCtx, run, &conv)
}

// ReleaseTurn gives back the slot ReserveTurn took, when the message's run was
// not claimed (not due yet, its conversation busy, or nothing recorded).
func (h Handoff) ReleaseTurn() {
	<-h.e.slots
	h.e.turns.Done()
}
