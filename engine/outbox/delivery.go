package outbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// A turn's outbound message (its reply, a continuation, a failure notice)
// is stored as DeliverySending before the platform call and settled after
// it, in the run's completion. A process that dies in between leaves it
// sending; the reaper queues a turn for its conversation, and every run
// first sends such messages again with the same idempotency key (Resend).
// So a crash loses no reply, and repeats one only where the platform
// cannot drop a repeated key: there each send holds a doubt slot
// (doubt.go) until its state is stored, at most
// scheduler.max_sends_in_doubt per platform and process, shared with
// scheduled messages. Discord's nonce drops the repeat when it comes
// within its window: at once when the process restarts (a new process
// fails its dead predecessor's runs), after runs.stale_after when another
// replica takes over.

// Deliver stores msg as sending for run, sends it into conv through a
// and notes the outcome on it (platform ids, sent or failed); the run's
// completion stores that. It returns the doubt slot the send holds until
// then (nil: none; see doubt.go). An undelivered message is kept with the
// error so nothing is lost. Should the message not be storable (the
// database is down), it is sent all the same and stored with the
// completion, as before delivery states were kept.
func (o *Outbox) Deliver(ctx context.Context, a core.Adapter, conv core.Conversation, run int64, msg *core.Message) (*Slot, error) {
	msg.RunID = &run
	msg.Delivery = core.DeliverySending
	if f, ok := a.(finisher); ok {
		// What grew is final once the updates have stopped (an update
		// in flight may be creating a message): the reply records it, so
		// that sending it again after a crash finishes or deletes it
		// (keep.go) rather than leaving it beside a second copy.
		f.g.halt()
		NoteGrown(msg, f.g.Grown())
		if f.g.key != "" {
			if msg.Metadata == nil {
				msg.Metadata = map[string]any{}
			}
			msg.Metadata[core.IdempotencyKeyKey] = f.g.key
		}
	}
	if msg.CreatedAt.IsZero() {
		msg.CreatedAt = o.cfg.Clock.Now().UTC()
	}
	key := fmt.Sprintf("run-%d", run)
	if err := o.cfg.Store.AppendMessage(context.WithoutCancel(ctx), msg); err != nil {
		o.log.Error("storing a reply before sending it; sending it all the same", "run", run, "err", err)
		msg.ID, msg.Seq = 0, 0
	} else {
		// The history cache gets it from the completion, settled: one
		// copy of the window a turn, not two.
		key = msg.IdempotencyKey()
		if msg.Metadata[core.FilesNotKeptKey] == true {
			o.log.Warn("a reply's files are not kept until it is sent (over store.max_file_bytes in flight, or one file over 50MB): a crash before the send ends would send its text alone",
				"run", run, "message", msg.ID, "files", len(msg.Files))
		}
	}
	sendCtx := ctx
	var slot *Slot
	if msg.ID != 0 {
		var err error
		if slot, err = o.TakeSlot(ctx, a); err != nil {
			Settle(msg, core.SendResult{}, err)
			return nil, err
		}
		sendCtx = slot.In(ctx)
	}
	res, err := o.Send(sendCtx, a, OutboundOf(conv, *msg, key))
	Settle(msg, res, err)
	return slot, err
}

// Resend sends again m, a reply a stopped process left sending, with its
// own idempotency key, holding a doubt slot until release is called
// (once its outcome is stored), and notes the outcome on m.
func (o *Outbox) Resend(ctx context.Context, a core.Adapter, conv core.Conversation, m *core.Message) (release func(), err error) {
	if finishInPlace(ctx, a, conv, m) {
		if len(m.Files) == 0 {
			return func() {}, nil
		}
		// Its files follow the finished text, as a streamed reply's do
		// (finisher.SendFiles), under the same key: sent already, a
		// platform that drops repeated keys drops them.
		slot, err := o.TakeSlot(ctx, a)
		if err != nil {
			return func() {}, err
		}
		res, err := o.Send(slot.In(ctx), a, core.OutboundMessage{ConversationID: conv.ID, ChannelThreadID: conv.ChannelThreadID,
			ChannelUserID: conv.ChannelUserID, Files: m.Files, IdempotencyKey: filesKey(m.IdempotencyKey())})
		Settle(m, core.SendResult{PlatformMessageIDs: append(GrownIDs(*m), res.PlatformMessageIDs...)}, err)
		return func() { slot.Give() }, err
	}
	if err := TakeBack(ctx, a, conv, *m); err != nil {
		return func() {}, fmt.Errorf("deleting what grew of a reply before sending it again: %w", err)
	}
	slot, err := o.TakeSlot(ctx, a)
	if err != nil {
		return func() {}, err
	}
	res, err := o.Send(slot.In(ctx), a, OutboundOf(conv, *m, m.IdempotencyKey()))
	Settle(m, res, err)
	return func() { slot.Give() }, err
}

// finishInPlace finishes a reply that grew as one message (Discord,
// Slack) by editing that message to the finished text, as the dead
// process's finish would have: the user sees the message they watched
// grow end well, rather than vanish and come again. It reports whether
// it did; a reply that may not fit one message, or an edit that fails,
// is left to be replaced (TakeBack, then sent). An edit repeats nothing,
// so it holds no doubt slot.
func finishInPlace(ctx context.Context, a core.Adapter, conv core.Conversation, m *core.Message) bool {
	ids := GrownIDs(*m)
	ed, ok := a.(core.MessageEditor)
	limit := a.Capabilities().MaxMessageLength
	// Rendering changes the length (markers go, escapes come): a margin.
	if !ok || len(ids) != 1 || limit <= 0 || utf8.RuneCountInString(m.Content) > limit*9/10 {
		return false
	}
	if err := ed.EditMessage(ctx, ids[0], OutboundOf(conv, *m, m.IdempotencyKey())); err != nil {
		return false
	}
	Settle(m, core.SendResult{PlatformMessageIDs: ids}, nil)
	return true
}

// OutboundOf is a stored message m as sent into conv with key.
func OutboundOf(conv core.Conversation, m core.Message, key string) core.OutboundMessage {
	text := m.Content
	switch {
	case speaksAlone(m):
		text = "" // the voice note says it
	case m.Metadata[core.FilesNotKeptKey] == true && len(m.Files) == 0 && m.Metadata[core.VoiceReplyKey] != true:
		// Sent again after a crash, without the bytes it could not keep.
		text = filesNotSentAgain(text, core.FilesOf(m))
	}
	return core.OutboundMessage{
		ConversationID:  conv.ID,
		ChannelThreadID: conv.ChannelThreadID,
		ChannelUserID:   conv.ChannelUserID,
		Text:            text,
		Format:          core.FormatOf(m), // what the model wrote is Markdown
		IdempotencyKey:  key,
		Choices:         core.MessageChoices(m),
		Files:           m.Files,
	}
}

// NumberedChoices is text with choices as numbered lines, for a platform
// without buttons: the user answers with the number or the label (the
// turn reads either as the tap, ChoiceTyped).
func NumberedChoices(text string, choices []core.Choice) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(text, "\n"))
	b.WriteString("\n")
	for i, c := range choices {
		fmt.Fprintf(&b, "\n%d. %s", i+1, c.Label)
	}
	return b.String()
}

// ChoiceTyped is the choice a user's text names among labels, by number
// ("2", "2.") or by label (any case), and whether it names one.
func ChoiceTyped(text string, labels []string) (int, bool) {
	t := strings.TrimSuffix(strings.TrimSpace(text), ".")
	if n, err := strconv.Atoi(t); err == nil && n >= 1 && n <= len(labels) {
		return n - 1, true
	}
	for i, l := range labels {
		if strings.EqualFold(t, strings.TrimSpace(l)) {
			return i, true
		}
	}
	return 0, false
}

// Settle notes a send's outcome on msg.
func Settle(msg *core.Message, res core.SendResult, err error) {
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	noteIDs(msg, res)
	if err != nil {
		msg.Delivery = core.DeliveryFailed
		msg.Metadata["undelivered"] = err.Error()
		return
	}
	msg.Delivery = core.DeliverySent
}

// Dropped marks a stored reply that never reached the user (the turn was
// restarted mid-send): it stays in the transcript for the record, out of
// later prompts.
func Dropped(msg *core.Message, why error) {
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	msg.Delivery = core.DeliveryDropped
	msg.Metadata["undelivered"] = "dropped: " + why.Error()
}
