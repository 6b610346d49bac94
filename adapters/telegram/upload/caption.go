package upload

import (
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// MaxCaption is Telegram's limit for a caption, in UTF-16 code units.
const MaxCaption = 1024

// Caption is msg.Text as a caption (Text as sent, Plain its plain text
// for a resend), its parse mode, and whether it fits one caption:
// rendered in one part of at most 1024 UTF-16 units. formatted is the
// adapter's format setting (markdown: MarkdownV2; plain: no markers).
func Caption(msg core.OutboundMessage, formatted bool) (markup.Part, models.ParseMode, bool) {
	var parts []markup.Part
	var mode models.ParseMode
	switch {
	case msg.Format != core.FormatRichText:
		return markup.Part{Text: msg.Text, Plain: msg.Text}, "", utf16Len(msg.Text) <= MaxCaption
	case formatted:
		parts, mode = markup.SplitTelegram(msg.Text, MaxCaption), models.ParseModeMarkdown
	default:
		parts = markup.SplitPlain(msg.Text, MaxCaption)
	}
	switch len(parts) {
	case 0:
		return markup.Part{}, mode, true
	case 1:
		return parts[0], mode, utf16Len(parts[0].Text) <= MaxCaption
	}
	// Over one caption: the text follows the file as a message.
	return markup.Part{Text: msg.Text, Plain: markup.Plain(msg.Text)}, mode, false
}

// utf16Len is the length of s in UTF-16 code units, as Telegram counts it.
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
