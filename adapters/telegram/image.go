package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/markup"
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
// so split if it must be). Retries and errors are as for Send. The result
// holds the photo's id, then the ids of the text that followed it.
func (a *Adapter) SendImage(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram photo: %w", err)
	}
	b, err := a.live()
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
	caption, mode := a.caption(msg)
	apart := false
	switch {
	case strings.TrimSpace(caption) == "":
	case utf16Len(caption) <= maxCaptionLength:
		params.Caption, params.ParseMode = caption, mode
	default:
		apart = true
	}
	id, err := a.deliver(ctx, "sending telegram photo", chatID, func(ctx context.Context) (*models.Message, error) {
		return b.SendPhoto(ctx, params)
	})
	if err != nil {
		return core.SendResult{}, err
	}
	res := core.SendResult{PlatformMessageIDs: []string{strconv.Itoa(id)}}
	if !apart {
		return res, nil
	}
	text := msg
	text.ImageURL = ""
	more, err := a.Send(ctx, text)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	if err != nil {
		return res, fmt.Errorf("sending the caption after the telegram photo: %w", err)
	}
	return res, nil
}

// caption is msg.Text as a caption, with its parse mode.
func (a *Adapter) caption(msg core.OutboundMessage) (string, models.ParseMode) {
	switch {
	case msg.Format == core.FormatRichText:
		return markup.TelegramV2(msg.Text), models.ParseModeMarkdown
	case a.Format == FormatMarkdownV2:
		return escapeMarkdownV2(msg.Text), models.ParseModeMarkdown
	default:
		return msg.Text, ""
	}
}
