package outbox

import (
	"context"

	"github.com/parleybot/parley/core"
)

// A reply grown by edits (Discord, Slack, Telegram's edits) shows half an
// answer until it is finished. The reply, recorded before its finish,
// carries the grown messages' ids (Deliver), so that resending it after a
// crash deletes them first (Resend, TakeBack) and the user is left with
// the finished text once. A draft (Telegram) creates no message: it
// expires.

// grownKey is the metadata key listing a reply's grown platform messages.
const grownKey = "grown"

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

// NoteGrown records on m the platform messages its stream grew.
func NoteGrown(m *core.Message, ids []string) {
	if len(ids) == 0 {
		return
	}
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	m.Metadata[grownKey] = ids
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
