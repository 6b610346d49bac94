package turns

import (
	"context"
	"log/slog"
	"slices"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
)

// Voice reply modes (voice.replies).
const (
	voiceMirror = "mirror"
	voiceAlways = "always"
)

// voicer answers by voice as voice.* says.
type voicer struct{ core.VoiceReplies }

// wanted reports whether the reply to t goes out as a voice note
// (voice.replies): always, or, in mirror mode, when the user's newest
// waiting message is a voice note; never where there is no speech service
// or the platform cannot send files. Such a reply is not streamed: it is
// heard once whole.
func (v voicer) wanted(t *core.Turn, a core.Adapter) bool {
	if v.Speaker == nil || (v.Mode != voiceAlways && v.Mode != voiceMirror) {
		return false
	}
	if _, ok := a.(core.FileSender); !ok {
		return false
	}
	if v.Mode == voiceAlways {
		return true
	}
	if t.Run.Kind != core.RunUserTurn {
		return false
	}
	waiting := waitingMessages(t.History)
	for i := len(waiting) - 1; i >= 0; i-- {
		if m := waiting[i]; !m.Deleted() {
			return slices.ContainsFunc(core.AttachmentsOf(m), func(a core.Attachment) bool { return a.Kind == core.AttachVoice })
		}
	}
	return false
}

// speak speaks msg's text and attaches it as a voice note, the text
// stored as the message (and sent after the voice note only when it
// carries buttons). A reply outbox.VoiceNote cannot speak goes as text.
func (v voicer) speak(ctx context.Context, log *slog.Logger, msg *core.Message) {
	note, ok := outbox.VoiceNote(ctx, log, v.VoiceReplies, msg.Content, core.FormatOf(*msg))
	if !ok {
		return
	}
	msg.AttachFiles(append(msg.Files, note))
	msg.Metadata[core.VoiceReplyKey] = true
}
