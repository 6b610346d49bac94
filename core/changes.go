package core

import (
	"context"
	"time"
)

// A user may edit or delete a message they sent (Telegram's
// edited_message, Discord's message update and delete, Slack's
// message_changed and message_deleted). The stored text follows: the
// history, the search index and the next prompt read the new text, a
// turn not started yet answers it, and a deleted message leaves the
// window. An edit to a message older than the window changes the record
// only; a change to a message the bot does not know is ignored.

// MessageChange is a user's edit or deletion of a message they sent.
type MessageChange struct {
	Platform        Platform
	ChannelThreadID string
	ChannelUserID   string
	// PlatformMessageID is the changed message's id, as its
	// InboundMessage had it.
	PlatformMessageID string
	// Text is the message's new text; empty when Deleted.
	Text    string
	Deleted bool
	At      time.Time
}

// ChangeHandler takes users' edits and deletions; the Host handed to
// adapters implements it. An adapter whose platform tells it about edits
// hands them over; one whose platform does not has nothing to call.
type ChangeHandler interface {
	HandleChange(ctx context.Context, c MessageChange) error
}

// Metadata keys of a changed message.
const (
	// EditedAtKey holds when a user last edited the message (RFC 3339).
	EditedAtKey = "edited_at"
	// DeletedKey is true on a message its user deleted: kept for the
	// record, out of the history a prompt reads.
	DeletedKey = "deleted"
)

// Deleted reports whether its user deleted m.
func (m Message) Deleted() bool { return m.Metadata[DeletedKey] == true }
