package outbox

import (
	"context"
	"log/slog"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// VoiceNote speaks text (in format) with v's speaker as an Ogg Opus voice
// note. It reports false, and the log says why, when the text is longer
// than v.MaxChars or the speech service fails (down, slow, garbage): the
// caller then sends the text, never nothing.
func VoiceNote(ctx context.Context, log *slog.Logger, v core.VoiceReplies, text string, format core.TextFormat) (core.OutboundFile, bool) {
	if format == core.FormatRichText {
		text = markup.Plain(text)
	}
	if n := utf8.RuneCountInString(text); v.MaxChars > 0 && n > v.MaxChars {
		log.Info("the message is too long to speak; sending it as text", "characters", n, "max_characters", v.MaxChars)
		return core.OutboundFile{}, false
	}
	data, err := v.Speaker.Speak(ctx, text)
	if err != nil {
		log.Warn("speaking the message failed; sending it as text", "err", err)
		return core.OutboundFile{}, false
	}
	return core.OutboundFile{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: data}, true
}

// speaksAlone reports whether m goes out as its voice note alone: a
// spoken message with no buttons (buttons need the text to sit on, so a
// question's text follows its voice note).
func speaksAlone(m core.Message) bool {
	return m.Metadata[core.VoiceReplyKey] == true && len(m.Files) > 0 && len(core.MessageChoices(m)) == 0
}
