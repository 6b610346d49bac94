package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/telegram/upload"
	"github.com/parleybot/parley/core"
)

var _ core.ImageSender = (*Adapter)(nil)

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
	caption, mode, fits := upload.Caption(msg, s.formatted())
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
