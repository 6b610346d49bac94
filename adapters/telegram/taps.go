package telegram

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// tapTimeout bounds the core's HandleTap, so that the acknowledgement
// still reaches Telegram, which refuses an answer about 15 seconds after
// the tap ("query is too old"), while the user's client shows a spinner.
const tapTimeout = 8 * time.Second

// noticeTapFailed is what a tap the core could not take shows.
const noticeTapFailed = "Could not take that now, try again."

// handleTap hands a tap on one of the bot's buttons in a private chat to
// the core (Host.HandleTap), acknowledges it with the core's notice
// (answerCallbackQuery, for every callback query, so the user's client
// stops its spinner) and, when the tap made the choice, marks it on the
// message (buttons.go). A tap anywhere else, or one the core fails to
// take, changes nothing.
func (in *inbound) handleTap(ctx context.Context, updateID int64, q *models.CallbackQuery) {
	log := func() *slog.Logger { return in.log.With("update_id", updateID) }
	in.mu.Lock()
	h, b := in.handler, in.bot
	in.mu.Unlock()
	if b == nil {
		return
	}
	if q.ID == "" {
		log().Warn("skipping a malformed telegram callback query: no id")
		return
	}
	msg, ok := in.normaliseTap(q, log)
	var answer core.TapAnswer
	if ok && h != nil {
		hctx, cancel := context.WithTimeout(ctx, tapTimeout)
		a, err := h.HandleTap(hctx, msg)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				log().Error("handing a telegram tap to the core", "chat_id", msg.ChannelThreadID, "err", err)
			}
			a = core.TapAnswer{Notice: noticeTapFailed}
		}
		answer = a
	}
	if err := in.answerQuery(ctx, b, q.ID, answer.Notice); err != nil && ctx.Err() == nil {
		if queryExpired(err) {
			// Late, or a tap delivered again (a batch retried) whose
			// first delivery was answered.
			log().Warn("telegram refused the acknowledgement of a tap: too late, or answered already", "err", err)
		} else {
			log().Warn("acknowledging a telegram tap failed", "err", err)
		}
	}
	if answer.Chosen == "" {
		return
	}
	chatID, _ := strconv.ParseInt(msg.ChannelThreadID, 10, 64)
	id, _ := strconv.Atoi(msg.Tap.MessageID)
	if err := in.send.setKeyboard(ctx, b, chatID, id, chosenKeyboard(answer.Chosen, msg.Tap.Data)); err != nil && ctx.Err() == nil {
		// The choice is stored; only the mark is missing, and a tap on
		// a button left showing is answered "Already answered.".
		log().Warn("marking the choice on a telegram message failed", "chat_id", chatID, "message_id", id, "err", err)
	}
}

// normaliseTap turns a tap on a button of the bot's message in a private
// chat into a core.InboundMessage with Tap set; for any other it logs why
// at debug level and reports false.
func (in *inbound) normaliseTap(q *models.CallbackQuery, log func() *slog.Logger) (core.InboundMessage, bool) {
	chat, msgID := tappedChat(q)
	switch {
	case q.InlineMessageID != "" || chat.ID == 0 || msgID == 0:
		// A message sent in inline mode, or a game: no chat the bot
		// talks in.
		log().Debug("ignoring a telegram tap on a message outside a chat")
		return core.InboundMessage{}, false
	case chat.Type != models.ChatTypePrivate:
		log().Debug("ignoring a telegram tap outside a private chat", "chat_type", chat.Type, "chat_id", chat.ID)
		return core.InboundMessage{}, false
	case q.From.ID == 0:
		log().Warn("skipping a malformed telegram tap: no sender", "chat_id", chat.ID)
		return core.InboundMessage{}, false
	case q.From.IsBot || q.From.ID == in.botID:
		log().Debug("ignoring a telegram tap by a bot", "chat_id", chat.ID, "from", q.From.ID)
		return core.InboundMessage{}, false
	case q.Data == "":
		log().Debug("ignoring a telegram tap without data", "chat_id", chat.ID)
		return core.InboundMessage{}, false
	}
	return core.InboundMessage{
		Platform:        Platform,
		ChannelThreadID: strconv.FormatInt(chat.ID, 10),
		ChannelUserID:   strconv.FormatInt(q.From.ID, 10),
		DisplayName:     displayName(&q.From),
		// A callback query carries no date: it is handled as it comes.
		SentAt: in.clock.Now().UTC(),
		Direct: true,
		Tap:    &core.Tap{Data: q.Data, MessageID: strconv.Itoa(msgID), ID: q.ID},
	}, true
}

// tappedChat is the chat and id of the message whose button q tapped;
// zero for a message sent in inline mode. A message too old for Telegram
// to show comes as an inaccessible message, with its chat and id still.
func tappedChat(q *models.CallbackQuery) (models.Chat, int) {
	switch {
	case q.Message.Message != nil:
		return q.Message.Message.Chat, q.Message.Message.ID
	case q.Message.InaccessibleMessage != nil:
		return q.Message.InaccessibleMessage.Chat, q.Message.InaccessibleMessage.MessageID
	}
	return models.Chat{}, 0
}
