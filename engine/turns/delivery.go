package turns

import (
	"github.com/parleybot/parley/core"
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
