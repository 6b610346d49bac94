package telegram

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/telegram/buttons"
	"github.com/parleybot/parley/core"
)

// tapTimeout bounds the core's HandleTap, so that the acknowledgement
// still reaches Telegram, which refuses one about 15 s after the tap.
const tapTimeout = 8 * time.Second

// noticeTapFailed is what a tap the core could not take shows.
const noticeTapFailed = "Could not take that now, try again."

// handleTap hands a tap on a button in a private chat to the core
// (Host.HandleTap), acknowledges every tap (answerCallbackQuery, once,
// with the core's notice: the client shows a spinner until then) and,
// when the tap made the choice, marks it on the message (buttons.Chosen).
// A tap anywhere else, or one the core fails to take, changes nothing.
func (in *inbound) handleTap(ctx context.Context, updateID int64, q *models.CallbackQuery) {
	log := in.log.With("update_id", updateID)
	in.mu.Lock()
	h, b := in.handler, in.bot
	in.mu.Unlock()
	if b == nil || q.ID == "" {
		return
	}
	msg, why := buttons.Tap(q, Platform, in.botID, in.clock.Now())
	var answer core.TapAnswer
	switch {
	case why != "":
		chat, _ := buttons.Chat(q)
		log.Debug("ignoring a telegram tap: "+why, "chat_id", chat.ID, "chat_type", chat.Type)
	case h != nil:
		msg.DisplayName = displayName(&q.From)
		hctx, cancel := context.WithTimeout(ctx, tapTimeout)
		a, err := h.HandleTap(hctx, msg)
		cancel()
		if err != nil && ctx.Err() == nil {
			log.Error("handing a telegram tap to the core", "chat_id", msg.ChannelThreadID, "err", err)
		}
		if err != nil {
			a = core.TapAnswer{Notice: noticeTapFailed}
		}
		answer = a
	}
	_, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: answer.Notice})
	if err != nil && ctx.Err() == nil {
		// "query is too old": late, or a tap delivered again whose first
		// delivery was answered.
		log.Warn("acknowledging a telegram tap failed", "err", in.sendError("answerCallbackQuery", err))
	}
	if answer.Chosen == "" {
		return
	}
	chatID, _ := strconv.ParseInt(msg.ChannelThreadID, 10, 64)
	id, _ := strconv.Atoi(msg.Tap.MessageID)
	if err := in.send.setKeyboard(ctx, b, chatID, id, buttons.Chosen(answer.Chosen, msg.Tap.Data)); err != nil && ctx.Err() == nil {
		// The choice is stored; a button left showing is answered
		// "Already answered.".
		log.Warn("marking the choice on a telegram message failed", "chat_id", chatID, "message_id", id, "err", err)
	}
}

// setKeyboard replaces the keyboard of message id (editMessageReplyMarkup)
// at the send_rate pace and with Send's retries; the same keyboard again
// ("message is not modified") is no error.
func (s *sender) setKeyboard(ctx context.Context, b *bot.Bot, chatID int64, id int, kb *buttons.Keyboard) error {
	_, err := s.deliver(ctx, "editing a telegram message's buttons", chatID, func(ctx context.Context) (*models.Message, error) {
		m, err := b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: chatID, MessageID: id, ReplyMarkup: buttons.Markup(kb)})
		if err != nil && strings.Contains(err.Error(), "message is not modified") {
			return &models.Message{ID: id}, nil
		}
		return m, err
	})
	return err
}
