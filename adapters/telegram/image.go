package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

var _ core.ImageSender = (*Adapter)(nil)

// maxCaptionLength is Telegram's limit for a photo's caption, in UTF-16
// code units.
const maxCaptionLength = 1024

// SendImage shows msg.ImageURL as a photo (sendPhoto; Telegram fetches
// the URL) with msg.Text as its caption, written per msg.Format as Send
// writes text. A caption longer than Telegram's 1024 characters, measured
// as sent (markup and escapes included), is not cut: the photo goes
// without one and the text follows as a message of its own (through Send,
// so split if it must be). A formatted caption Telegram refuses ("can't
// parse entities") is logged and the photo sent again with the caption as
// plain text. Retries and errors are as for Send. The result holds the
// photo's id, then the ids of the text that followed it.
func (s *sender) SendImage(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram photo: %w", err)
	}
	b, err := s.live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram photo: %w", err)
	}
	chatID, err := parseChatID(msg.ChannelThreadID)
	if err != nil {
		return core.SendResult{}, err
	}
	if strings.TrimSpace(msg.ImageURL) == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "no image URL"}
	}
	params := &bot.SendPhotoParams{ChatID: chatID, Photo: &models.InputFileString{Data: msg.ImageURL}}
	caption, mode, fits := s.caption(msg)
	apart := false
	switch {
	case strings.TrimSpace(caption.Text) == "":
	case fits:
		params.Caption, params.ParseMode = caption.Text, mode
	default:
		apart = true
	}
	send := func(ctx context.Context) (*models.Message, error) { return b.SendPhoto(ctx, params) }
	id, err := s.deliver(ctx, "sending telegram photo", chatID, send)
	if offset, refused := parseEntitiesOffset(err); refused && params.ParseMode != "" {
		s.log.Warn("telegram refused a photo caption's markup; sending it again as plain text",
			"chat_id", chatID, "byte_offset", offset, "err", err)
		params.Caption, params.ParseMode = caption.Plain, ""
		id, err = s.deliver(ctx, "sending telegram photo", chatID, send)
	}
	if err != nil {
		return core.SendResult{}, err
	}
	res := core.SendResult{PlatformMessageIDs: []string{strconv.Itoa(id)}}
	if !apart {
		return res, nil
	}
	text := msg
	text.ImageURL = ""
	more, err := s.Send(ctx, text)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	if err != nil {
		return res, fmt.Errorf("sending the caption after the telegram photo: %w", err)
	}
	return res, nil
}

// caption is msg.Text as a photo's caption (Text as sent, Plain its plain
// text for a resend), its parse mode, and whether it fits one caption:
// rendered in one part of at most 1024 UTF-16 units.
func (s *sender) caption(msg core.OutboundMessage) (markup.Part, models.ParseMode, bool) {
	var parts []markup.Part
	var mode models.ParseMode
	switch {
	case msg.Format != core.FormatRichText:
		return markup.Part{Text: msg.Text, Plain: msg.Text}, "", utf16Len(msg.Text) <= maxCaptionLength
	case s.formatted():
		parts, mode = markup.SplitTelegram(msg.Text, maxCaptionLength), models.ParseModeMarkdown
	default:
		parts = markup.SplitPlain(msg.Text, maxCaptionLength)
	}
	switch len(parts) {
	case 0:
		return markup.Part{}, mode, true
	case 1:
		return parts[0], mode, utf16Len(parts[0].Text) <= maxCaptionLength
	}
	// Over one caption: the text follows the photo through Send.
	return markup.Part{Text: msg.Text, Plain: markup.Plain(msg.Text)}, mode, false
}
