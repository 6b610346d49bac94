package upload

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// Sender uploads files with what the telegram adapter lends it.
type Sender struct {
	Bot *bot.Bot
	// Deliver makes a call that creates one message in a chat, paced and
	// retried as the adapter's sends are (429 retry_after, 5xx), and
	// returns the message's id; what names the call in errors.
	Deliver func(ctx context.Context, what string, chatID int64, call func(context.Context) (*models.Message, error)) (int, error)
	// SendText sends a message's text as the adapter's Send does.
	SendText func(context.Context, core.OutboundMessage) (core.SendResult, error)
	// Formatted is the adapter's format setting: markdown (MarkdownV2).
	Formatted bool
	Log       *slog.Logger
}

// Send uploads msg.Files to chatID in order, one call each, msg.Text as
// the first file's caption. A caption over Telegram's 1024 characters (as
// sent), or a message with choices, goes after the files as a message of
// its own through SendText, split if it must be. A formatted caption
// Telegram refuses ("can't parse entities") is logged and the file sent
// again with it as plain text. Every file is checked before the first is
// sent, so a file over every limit fails the message with nothing sent.
// Files already delivered are never sent again: the result holds their
// ids even when a later one fails.
func (s Sender) Send(ctx context.Context, chatID int64, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram files: %w", err)
	}
	if len(msg.Files) == 0 {
		return s.SendText(ctx, msg)
	}
	items := make([]item, 0, len(msg.Files))
	for _, f := range msg.Files {
		it, err := prepare(f)
		if err != nil {
			return core.SendResult{}, err
		}
		items = append(items, it)
	}
	caption, mode, fits := Caption(msg, s.Formatted)
	hasText := strings.TrimSpace(msg.Text) != ""
	apart := hasText && (!fits || len(msg.Choices) > 0)
	var res core.SendResult
	for i, it := range items {
		var c captioned
		if i == 0 && hasText && !apart {
			c = captioned{text: caption.Text, plain: caption.Plain, mode: mode}
		}
		id, err := s.sendItem(ctx, chatID, it, c)
		if err != nil {
			return res, fmt.Errorf("file %d of %d (%q): %w", i+1, len(items), it.name, err)
		}
		res.PlatformMessageIDs = append(res.PlatformMessageIDs, strconv.Itoa(id))
	}
	if !apart {
		return res, nil
	}
	text := msg
	text.Files = nil
	more, err := s.SendText(ctx, text)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	if err != nil {
		return res, fmt.Errorf("sending the text after the telegram files: %w", err)
	}
	return res, nil
}

// captioned is a file's caption: as sent, as plain text, its parse mode.
type captioned struct {
	text, plain string
	mode        models.ParseMode
}

// sendItem uploads it with caption c, and once more with c's plain text
// when Telegram refuses c's markup.
func (s Sender) sendItem(ctx context.Context, chatID int64, it item, c captioned) (int, error) {
	what := "sending telegram " + it.method
	id, err := s.Deliver(ctx, what, chatID, s.call(chatID, it, c.text, c.mode))
	if err != nil && c.mode != "" && strings.Contains(err.Error(), "can't parse entities") {
		s.Log.Warn("telegram refused a file caption's markup; sending it again as plain text",
			"chat_id", chatID, "method", it.method, "err", err)
		id, err = s.Deliver(ctx, what, chatID, s.call(chatID, it, c.plain, ""))
	}
	return id, err
}

// call is the Bot API call that uploads it. Each attempt reads the bytes
// afresh, so a retried call sends the whole file again.
func (s Sender) call(chatID int64, it item, caption string, mode models.ParseMode) func(context.Context) (*models.Message, error) {
	return func(ctx context.Context) (*models.Message, error) {
		file := &models.InputFileUpload{Filename: it.name, Data: bytes.NewReader(it.data)}
		switch it.method {
		case photo:
			return s.Bot.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chatID, Photo: file, Caption: caption, ParseMode: mode})
		case voice:
			return s.Bot.SendVoice(ctx, &bot.SendVoiceParams{ChatID: chatID, Voice: file, Caption: caption, ParseMode: mode})
		case audio:
			return s.Bot.SendAudio(ctx, &bot.SendAudioParams{ChatID: chatID, Audio: file, Caption: caption, ParseMode: mode})
		}
		return s.Bot.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chatID, Document: file, Caption: caption, ParseMode: mode})
	}
}
