package core

import (
	"context"
	"errors"
	"time"
)

// Streamer is an optional Adapter capability: show a reply growing where
// the user reads it while the model writes it (docs/contracts.md,
// "Streaming"): a Telegram draft or a message grown by edits, a Discord
// message edited as it grows, Slack's stream methods, the web chat's
// event stream.
//
// The core calls Stream once per reply, Update as the visible text grows
// (at most once per StreamInterval, never concurrently, never after
// Finish or Abandon) and then exactly one of Finish or Abandon.
type Streamer interface {
	// Stream prepares a reply in msg's conversation (ConversationID,
	// ChannelThreadID, ChannelUserID, Format, IdempotencyKey; Text is
	// empty). Nothing is shown until the first Update. An error means the
	// reply is sent whole, with Send, as if the adapter did not stream.
	Stream(ctx context.Context, msg OutboundMessage) (Stream, error)
}

// Stream is one reply growing on a platform.
type Stream interface {
	// Update shows text, the whole visible reply so far (never a delta),
	// in place of what the last Update showed. Text past the platform's
	// limit continues in a new message, split where Send would split the
	// finished text. An update the platform refuses or rate-limits is
	// skipped, not retried: the caller sends a later one, and Finish
	// always goes out. Update paces itself below the adapter's finished
	// sends: it waits for no slot a reply or a scheduled send needs, and
	// returns ErrStreamBusy when none is free now.
	Update(ctx context.Context, text string) error
	// Finish shows msg, the finished reply, in place of what grew, as
	// Send would have shown it (split, rendered), retrying as Send does;
	// the result names every platform message the reply now lives in. A
	// reply that never grew is sent as Send sends it.
	Finish(ctx context.Context, msg OutboundMessage) (SendResult, error)
	// Abandon takes back what grew, when the reply is not sent after all
	// (the model chose silence, the turn failed or was stopped): a message
	// grown by edits is deleted, a draft is left to expire.
	Abandon(ctx context.Context) error
	// Grown lists the platform messages the stream has created so far
	// (none for a draft): the core records them, so that a process that
	// restarts after a crash mid-stream can finish or delete them
	// (MessageEditor).
	Grown() []string
}

// ErrStreamBusy is Stream.Update's error when the pacer has no slot free
// for a partial now: the update is skipped, a later one carries its text.
var ErrStreamBusy = errors.New("no send slot free for a partial reply now")

// MessageEditor is an optional Adapter capability: change or delete a
// message the bot sent, by its platform id (a message grown by a stream
// that a crash left behind).
type MessageEditor interface {
	// EditMessage replaces the text of the bot's message id in msg's
	// conversation with msg.Text (rendered as Send renders it; text over
	// the platform's limit is cut, the caller sends the rest).
	EditMessage(ctx context.Context, id string, msg OutboundMessage) error
	// DeleteMessage deletes the bot's message id in the conversation
	// channelThreadID; one already gone is not an error.
	DeleteMessage(ctx context.Context, channelThreadID, id string) error
}

// StreamCapabilities say how an adapter streams, for the core's pacing
// and for `parley doctor`.
type StreamCapabilities struct {
	// Mode names how replies grow ("drafts", "edits", "stream", "events",
	// "print"); "" when the adapter does not stream (turned off in its
	// config, or unable to).
	Mode string
	// MinInterval is the least time the platform allows between two
	// updates of one reply (Discord: five edits per five seconds a
	// channel); the core never updates faster, whatever
	// bot.streaming.interval says.
	MinInterval time.Duration
	// Refresh, when not 0, is how long a partial may stay unchanged
	// before it is shown again: a Telegram draft disappears 30 s after
	// it was sent, and a model that pauses longer (a slow tool) must not
	// leave the user with nothing. 0: a partial stays until replaced.
	Refresh time.Duration
}

// StreamModer is implemented by a Streamer that can say how it streams.
type StreamModer interface {
	StreamCapabilities() StreamCapabilities
}
