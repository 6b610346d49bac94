package outbox

import (
	"context"
	"errors"
	"log/slog"

	"github.com/parleybot/parley/core"
)

// A reply grown by edits (Discord, Slack, Telegram's edits) shows half an
// answer until it is finished. So that a crash mid-stream leaves no half
// answer behind as if it were the reply, the first message a stream
// creates is recorded at once, as a placeholder row left sending with
// the grown ids in its metadata and no text; it is dropped once the
// reply is finished or taken back. One a dead process left sending is
// found by the next turn of its conversation (PendingDeliveries), which
// deletes the grown messages instead of sending anything (TakeBack), and
// that turn's reply is sent anew. A reply recorded before its finish
// carries the grown ids too (Deliver), so resending it deletes them
// first. A draft (Telegram) creates no message and needs no record: it
// expires.

// grownKey is the metadata key listing a row's grown platform messages.
const grownKey = "grown"

// keeper records the messages one stream grew.
type keeper struct {
	store Store
	conv  core.Conversation
	run   int64
	row   *core.Message // the placeholder, once recorded
}

// grew records the placeholder the first time the stream has grown a
// message; it is called from the Grower's loop only.
func (k *keeper) grew(ctx context.Context, log *slog.Logger, ids []string) {
	if k.row != nil || len(ids) == 0 || k.store == nil {
		return
	}
	run := k.run
	m := &core.Message{ConversationID: k.conv.ID, Role: core.RoleAssistant, Source: core.SourceReply,
		SessionRecordID: k.conv.CurrentRecordID, RunID: &run, Delivery: core.DeliverySending,
		Metadata: map[string]any{grownKey: append([]string(nil), ids...), "format": string(core.FormatText)}}
	if err := k.store.AppendMessage(context.WithoutCancel(ctx), m); err != nil {
		log.Warn("recording a growing reply's message; a crash now would leave it half written", "err", err)
		return
	}
	k.row = m
}

// settle drops the placeholder: the reply was finished or taken back. It
// runs after the Grower's loop has ended.
func (k *keeper) settle(ctx context.Context, log *slog.Logger) {
	if k.row == nil {
		return
	}
	Dropped(k.row, errGrownReply)
	if err := k.store.SettleDelivery(context.WithoutCancel(ctx), *k.row); err != nil {
		log.Warn("settling a grown reply's record", "message", k.row.ID, "err", err)
	}
}

// errGrownReply is why a placeholder is dropped: never a reply itself.
var errGrownReply = errors.New("the record of a reply's growing message, not a reply")

// GrownIDs are the platform messages a stream grew that m records.
func GrownIDs(m core.Message) []string {
	var ids []string
	switch v := m.Metadata[grownKey].(type) {
	case []string:
		ids = v
	case []any: // read back from JSON
		for _, x := range v {
			if s, ok := x.(string); ok {
				ids = append(ids, s)
			}
		}
	}
	return ids
}

// IsGrownPlaceholder reports whether m is a stream's placeholder row
// (no text of its own), not a reply.
func IsGrownPlaceholder(m core.Message) bool {
	return m.Content == "" && len(GrownIDs(m)) > 0
}

// TakeBack deletes the messages m's stream grew (a dead process left them
// half written), where a can delete; it reports whether none is left.
func TakeBack(ctx context.Context, a core.Adapter, conv core.Conversation, m core.Message) error {
	ids := GrownIDs(m)
	if len(ids) == 0 {
		return nil
	}
	ed, ok := a.(core.MessageEditor)
	if !ok {
		return nil
	}
	for _, id := range ids {
		if err := ed.DeleteMessage(ctx, conv.ChannelThreadID, id); err != nil {
			return err
		}
	}
	return nil
}
