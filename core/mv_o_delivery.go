package core

import (
	"context"
	"fmt"
)

// deliver stores msg as sending, sends it through the adapter and notes
// the outcome on it (platform ids, sent or failed); the run's completion
// stores that. An undelivered message is kept with the error so nothing
// is lost. Should the message not be storable (the database is down), it
// is sent all the same and stored with the completion, as before
// delivery states were kept.
func (d *Dispatcher) deliver(ctx context.Context, a Adapter, t *Turn, msg *Message) error {
	runID := t.Run.ID
	msg.RunID = &runID
	msg.Delivery = DeliverySending
	if msg.CreatedAt.IsZero() {
		msg.CreatedAt = d.cfg.Clock.Now().UTC()
	}
	key := fmt.Sprintf("run-%d", t.Run.ID)
	if err := d.cfg.Store.AppendMessage(context.WithoutCancel(ctx), msg); err != nil {
		d.log.Error("storing a reply before sending it; sending it all the same", "run", t.Run.ID, "err", err)
		msg.ID, msg.Seq = 0, 0
	} else {
		// The history cache gets it from the completion, settled: one
		// copy of the window a turn, not two.
		key = msg.IdempotencyKey()
	}
	sendCtx := ctx
	if msg.ID != 0 {
		c, slot, err := d.holdDoubt(ctx, a)
		if err != nil {
			d.settle(msg, SendResult{}, err)
			return err
		}
		if slot != nil {
			// Held until the run's completion stores the outcome.
			t.doubt = append(t.doubt, slot)
		}
		sendCtx = c
	}
	res, err := d.send(sendCtx, a, outboundOf(t.Conversation, *msg, key))
	d.settle(msg, res, err)
	return err
}

// outboundOf is a turn's stored message m as sent into conv with key.
func outboundOf(conv Conversation, m Message, key string) OutboundMessage {
	return OutboundMessage{
		ConversationID:  conv.ID,
		ChannelThreadID: conv.ChannelThreadID,
		ChannelUserID:   conv.ChannelUserID,
		Text:            m.Content,
		Format:          FormatOf(m), // what the model wrote is Markdown
		IdempotencyKey:  key,
	}
}

// settle notes a send's outcome on msg.
func (d *Dispatcher) settle(msg *Message, res SendResult, err error) {
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	if len(res.PlatformMessageIDs) > 0 {
		msg.PlatformMessageID = res.PlatformMessageIDs[0]
		if len(res.PlatformMessageIDs) > 1 {
			msg.Metadata["platform_message_ids"] = res.PlatformMessageIDs
		}
	}
	if err != nil {
		msg.Delivery = DeliveryFailed
		msg.Metadata["undelivered"] = err.Error()
		return
	}
	msg.Delivery = DeliverySent
}

// dropped marks a stored reply that never reached the user (the turn was
// restarted mid-send): it stays in the transcript for the record, out of
// later prompts.
func dropped(msg *Message, why error) {
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	msg.Delivery = DeliveryDropped
	msg.Metadata["undelivered"] = "dropped: " + why.Error()
}

// holdDoubt takes a doubt slot for a send to a (doubt.go), unless its
// platform drops a repeated key; it returns the context to send with and
// the slot to give back once the send's outcome is stored (nil: none).
func (d *Dispatcher) holdDoubt(ctx context.Context, a Adapter) (context.Context, *doubtSlot, error) {
	if d.dropsRepeats(a) {
		return ctx, nil, nil
	}
	slot, err := takeDoubtSlot(ctx, d.lanes.doubtOf(a.Platform(), d.cfg.MaxSendsInDoubt))
	if err != nil {
		return ctx, nil, fmt.Errorf("waiting for a send slot: %w", err)
	}
	return slot.in(ctx), slot, nil
}
