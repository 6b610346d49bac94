package turns

import (
	"context"
	"log/slog"
	"slices"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
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

// speak speaks msg's text and attaches it as a voice note, sent
// alone, the text stored as the message. A reply longer than
// voice.max_characters, or one the speech service fails on (down, slow,
// garbage), goes as text, and the log says why.
func (v voicer) speak(ctx context.Context, log *slog.Logger, msg *core.Message) {
	text := msg.Content
	if core.FormatOf(*msg) == core.FormatRichText {
		text = markup.Plain(text)
	}
	if n := utf8.RuneCountInString(text); v.MaxChars > 0 && n > v.MaxChars {
		log.Info("the reply is too long to speak; sending it as text", "characters", n, "max_characters", v.MaxChars)
		return
	}
	data, err := v.Speaker.Speak(ctx, text)
	if err != nil {
		log.Warn("speaking the reply failed; sending it as text", "err", err)
		return
	}
	msg.AttachFiles(append(msg.Files, core.OutboundFile{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: data}))
	msg.Metadata[core.VoiceReplyKey] = true
}
