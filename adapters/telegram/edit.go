package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/adapters/telegram/buttons"
	"github.com/parleybot/parley/adapters/telegram/reactions"
	"github.com/parleybot/parley/core"
)

// EditMessage replaces the text of the bot's message id in the chat
// msg.ChannelThreadID with msg.Text, rendered as Send renders it; text
// over 4096 characters is cut where Send would end its first part, and
// the caller sends the rest. msg.Choices go on the message as a keyboard
// when its text fits (an edit without one removes the keyboard the
// message had). An edit to the text the message already shows is no
// error. It waits its turn at the send_rate pace and retries
// as Send does.
func (s *streamer) EditMessage(ctx context.Context, id string, msg core.OutboundMessage) error {
	b, chatID, mid, err := s.target("editing telegram message", msg.ChannelThreadID, id)
	if err != nil {
		return err
	}
	parts, formatted := s.send.textParts(msg)
	if len(parts) == 0 {
		return &core.PermanentError{Reason: "empty text"}
	}
	var kb *buttons.Keyboard
	if len(parts) == 1 {
		kb = buttons.Layout(msg.Choices)
	}
	_, err = s.editFinal(ctx, b, chatID, mid, parts[0], formatted, kb)
	return err
}

// DeleteMessage deletes the bot's message id in the chat channelThreadID;
// one already gone ("message to delete not found") is no error.
func (s *streamer) DeleteMessage(ctx context.Context, channelThreadID, id string) error {
	b, chatID, mid, err := s.target("deleting telegram message", channelThreadID, id)
	if err != nil {
		return err
	}
	return s.deleteMessage(ctx, b, chatID, mid)
}

// target is the live bot, and the chat and message of a call on one of
// the messages of a conversation; what names the call in errors.
func (s *streamer) target(what, channelThreadID, id string) (*bot.Bot, int64, int, error) {
	b, err := s.live()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w", what, err)
	}
	chatID, err := parseChatID(channelThreadID)
	if err != nil {
		return nil, 0, 0, err
	}
	mid, err := parseMessageID(id)
	return b, chatID, mid, err
}

// React sets the bot's reaction on message messageID of the chat
// channelThreadID (core.Reactor). Telegram takes a fixed set of emoji
// from bots: emoji is mapped onto it, and one it cannot show is a
// core.PermanentError naming the set, before any call (reactions.Pick).
func (s *streamer) React(ctx context.Context, channelThreadID, messageID, emoji string) error {
	e, err := reactions.Pick(emoji)
	if err != nil {
		return err
	}
	if err := s.setReaction(ctx, fmt.Sprintf("reacting with %s on telegram", e), channelThreadID, messageID, e); err != nil {
		return err
	}
	s.reacted.Set(channelThreadID+":"+messageID, e)
	return nil
}

// Unreact takes the bot's reaction emoji back (core.Unreactor): a bot
// has at most one per message, so its list is set empty, unless this
// process has since put another emoji there (the model's tool react
// after the acknowledgement), which stays. A message gone has no
// reaction left: no error.
func (s *streamer) Unreact(ctx context.Context, channelThreadID, messageID, emoji string) error {
	key := channelThreadID + ":" + messageID
	if e, err := reactions.Pick(emoji); err == nil && s.reacted.Replaced(key, e) {
		return nil
	}
	err := s.setReaction(ctx, "taking back a reaction on telegram", channelThreadID, messageID, "")
	if err != nil && strings.Contains(err.Error(), "message to react not found") {
		return nil
	}
	if err == nil {
		s.reacted.Set(key, "")
	}
	return err
}

// setReaction sets the bot's reactions on a message to emoji alone, or to
// none for "" (setMessageReaction), paced and retried like a send; what
// names the call in errors.
func (s *streamer) setReaction(ctx context.Context, what, channelThreadID, messageID, emoji string) error {
	b, chatID, id, err := s.target(what, channelThreadID, messageID)
	if err == nil {
		params := &bot.SetMessageReactionParams{ChatID: chatID, MessageID: id, Reaction: reactions.Of(emoji)}
		_, err = s.send.deliver(ctx, what, chatID, func(ctx context.Context) (*models.Message, error) {
			_, err := b.SetMessageReaction(ctx, params)
			return &models.Message{ID: id}, err
		})
	}
	return err
}

// parseMessageID reads a platform message id.
func parseMessageID(id string) (int, error) {
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 {
		return 0, &core.PermanentError{Reason: fmt.Sprintf("message id %q is not a telegram message id", id)}
	}
	return n, nil
}

// editFinal edits message id to part p for good, at the send_rate pace
// and with Send's retries; when Telegram refuses the markup, the part's
// plain text goes instead (cut to fit), as Send would resend it. The
// message shows the keyboard kb after the edit (nil: none).
func (s *streamer) editFinal(ctx context.Context, b *bot.Bot, chatID int64, id int, p markup.Part, formatted bool, kb *buttons.Keyboard) ([]string, error) {
	err := s.edit(ctx, b, chatID, id, p.Text, formatted, kb)
	if offset, refused := parseEntitiesOffset(err); formatted && refused {
		s.log.Warn("telegram refused an edited message's markup; editing it to plain text",
			"chat_id", chatID, "message_id", id, "byte_offset", offset, "err", err)
		plain := splitMessage(p.Plain, maxMessageLength)
		if len(plain) == 0 {
			return nil, fmt.Errorf("editing to the plain text of a refused message: %w", err)
		}
		err = s.edit(ctx, b, chatID, id, plain[0], false, kb)
	}
	if err != nil {
		return nil, err
	}
	return []string{strconv.Itoa(id)}, nil
}

// edit makes one editMessageText call count as a send: it waits its slot
// and is retried as deliver retries. "message is not modified" is success.
// Telegram drops a message's keyboard when an edit names none: kb is the
// one it shows after.
func (s *streamer) edit(ctx context.Context, b *bot.Bot, chatID int64, id int, text string, formatted bool, kb *buttons.Keyboard) error {
	params := &bot.EditMessageTextParams{ChatID: chatID, MessageID: id, Text: text, ParseMode: parseMode(formatted), ReplyMarkup: buttons.Markup(kb)}
	_, err := s.send.deliver(ctx, "editing telegram message", chatID, func(ctx context.Context) (*models.Message, error) {
		m, err := b.EditMessageText(ctx, params)
		if notModified(err) {
			return &models.Message{ID: id}, nil
		}
		return m, err
	})
	return err
}

// deleteMessage deletes message id, retrying what a retry can fix; a
// message already gone is no error.
func (s *streamer) deleteMessage(ctx context.Context, b *bot.Bot, chatID int64, id int) error {
	const what = "deleting telegram message"
	var status *statusBox
	_, err := retry.Do(ctx, s.retryPolicy(), what, []any{"chat_id", chatID, "message_id", id}, func(ctx context.Context) (bool, error) {
		rctx, box := withStatus(ctx)
		status = box
		ok, err := b.DeleteMessage(rctx, &bot.DeleteMessageParams{ChatID: chatID, MessageID: id})
		if err != nil && strings.Contains(err.Error(), "message to delete not found") {
			return true, nil
		}
		return ok, err
	}, func(err error) retry.Verdict { return s.judge(err, status.code, s.sendError(what, err)) })
	return err
}
