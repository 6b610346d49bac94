package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/core"
)

var _ core.ConversationOpener = (*Adapter)(nil)

// opener finds the private chat with a user the bot has not talked to
// yet.
type opener struct {
	*state
}

// OpenConversation finds the private chat with a Telegram user, for a
// message routed to someone the bot has no conversation with yet. A
// private chat's id is its user's id, so either req.ChannelUserID or
// req.ChannelThreadID names the user; when both are given they must be the
// same (a plain error otherwise). getChat checks that Telegram knows the
// chat: a user who never started the bot ("chat not found"), blocked it
// (403) or has no valid id is an error wrapping core.ErrUnreachable that
// says what the user must do. 429 and 5xx answers are retried as in Send.
//
// getChat cannot tell everything: a user the bot has only met in a group
// is found although they never started it, and Send to them then fails
// with a *core.PermanentError.
func (o *opener) OpenConversation(ctx context.Context, req core.OpenRequest) (core.OpenedConversation, error) {
	if err := ctx.Err(); err != nil {
		return core.OpenedConversation{}, fmt.Errorf("opening telegram conversation: %w", err)
	}
	b, err := o.live()
	if err != nil {
		return core.OpenedConversation{}, fmt.Errorf("opening telegram conversation: %w", err)
	}
	raw := req.ChannelUserID
	switch {
	case raw == "" && req.ChannelThreadID == "":
		return core.OpenedConversation{}, fmt.Errorf("opening telegram conversation: no channel_user_id or channel_thread_id given: %w", core.ErrBadAddress)
	case raw == "":
		raw = req.ChannelThreadID
	case req.ChannelThreadID != "" && req.ChannelThreadID != raw:
		return core.OpenedConversation{}, fmt.Errorf(
			"opening telegram conversation: channel_thread_id %q is not the private chat of user %q (a private chat's id is its user's id): %w",
			req.ChannelThreadID, raw, core.ErrBadAddress)
	}
	userID, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || userID <= 0 {
		// Groups and channels have negative ids; users positive ones.
		return core.OpenedConversation{}, fmt.Errorf("opening telegram conversation: %q is not a telegram user id: %w", raw, core.ErrUnreachable)
	}
	what := fmt.Sprintf("opening telegram conversation with user %d", userID)
	chat, err := o.getChat(ctx, b, userID)
	if err != nil {
		return core.OpenedConversation{}, o.openError(what, err)
	}
	if chat.Type != models.ChatTypePrivate {
		return core.OpenedConversation{}, fmt.Errorf("%s: chat %d is a %s, not a private chat", what, userID, chat.Type)
	}
	id := strconv.FormatInt(chat.ID, 10)
	return core.OpenedConversation{
		ChannelThreadID: id,
		ChannelUserID:   id,
		DisplayName:     displayName(&models.User{FirstName: chat.FirstName, LastName: chat.LastName, Username: chat.Username}),
	}, nil
}

// getChat calls getChat, retrying what a retry can fix as sendPart does.
// Its Bot API errors are returned as they are, to be classified.
func (o *opener) getChat(ctx context.Context, b *bot.Bot, chatID int64) (*models.ChatFullInfo, error) {
	var status *statusBox
	chat, err := retry.Do(ctx, o.retryPolicy(), "getting telegram chat", []any{"chat_id", chatID}, func(ctx context.Context) (*models.ChatFullInfo, error) {
		rctx, box := withStatus(ctx)
		status = box
		return b.GetChat(rctx, &bot.GetChatParams{ChatID: chatID})
	}, func(err error) retry.Verdict { return o.judge(err, status.code, err) })
	if err != nil {
		return nil, err
	}
	if chat == nil || chat.ID == 0 {
		return nil, errors.New("no chat in the answer")
	}
	return chat, nil
}

// openError explains why getChat failed; a chat Telegram will not let the
// bot into wraps core.ErrUnreachable and says what the user must do, since
// bots may only write to users who started them.
func (o *opener) openError(what string, err error) error {
	desc := o.scrub(err).Error()
	switch {
	case errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(desc), "chat not found"):
		return fmt.Errorf("%s: the user has not started the bot: they must open it in Telegram and press Start first: %w", what, core.ErrUnreachable)
	case errors.Is(err, bot.ErrorForbidden):
		// "bot was blocked by the user", "user is deactivated", ...
		desc = strings.TrimPrefix(desc, bot.ErrorForbidden.Error()+", ")
		return fmt.Errorf("%s: telegram refuses (%s): the user must open the bot in Telegram, unblock it if they blocked it, and press Start: %w", what, desc, core.ErrUnreachable)
	case errors.Is(err, bot.ErrorUnauthorized):
		return fmt.Errorf("%s: unauthorized (is the token revoked?)", what)
	default:
		return fmt.Errorf("%s: %w", what, o.scrub(err))
	}
}
