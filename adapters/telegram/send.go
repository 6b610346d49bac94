package telegram

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/retry"
	"github.com/parleybot/parley/adapters/telegram/buttons"
	"github.com/parleybot/parley/core"
)

// sender sends to Telegram: it splits and renders replies, paces them
// per chat and retries what Telegram did not take.
type sender struct {
	*state
}

// Send delivers msg.Text to the chat msg.ChannelThreadID, split into parts
// Telegram accepts, in order. Text (core.FormatText) goes as written, with
// no parse mode, whatever the format setting. Rich text
// (core.FormatRichText, Markdown) is rendered with markup.SplitTelegram
// and every part goes with parse_mode MarkdownV2 (format markdown, the
// default), or as plain text without the markers (format plain). A part
// Telegram refuses with "can't parse entities" is logged with the byte
// offset Telegram names and sent once more as its plain text, so a message
// is never lost to markup. A part that gets 429 is sent again after the
// delay Telegram asks for; a 5xx answer is retried with backoff; parts
// already delivered are never sent twice. The result holds the ids of the
// delivered parts even when a later part fails.
func (s *sender) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram message: %w", err)
	}
	b, err := s.live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram message: %w", err)
	}
	chatID, err := parseChatID(msg.ChannelThreadID)
	if err != nil {
		return core.SendResult{}, err
	}
	parts, formatted := s.textParts(msg)
	if len(parts) == 0 {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	ids, err := s.sendParts(ctx, b, chatID, parts, 0, formatted, buttons.Layout(msg.Choices))
	return core.SendResult{PlatformMessageIDs: ids}, err
}

// sendParts sends parts[from:] in order as Send does, and returns the
// ids of those delivered. The keyboard kb (nil: none) goes on the last
// part, under the end of the text.
func (s *sender) sendParts(ctx context.Context, b *bot.Bot, chatID int64, parts []markup.Part, from int, formatted bool, kb *buttons.Keyboard) ([]string, error) {
	ids := make([]string, 0, len(parts)-from)
	for i := from; i < len(parts); i++ {
		var partKB *buttons.Keyboard
		if i == len(parts)-1 {
			partKB = kb
		}
		more, err := s.sendOne(ctx, b, chatID, parts[i], formatted, i, len(parts), partKB)
		ids = append(ids, more...)
		if err != nil {
			if len(parts) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
			}
			return ids, err
		}
	}
	return ids, nil
}

// sendOne sends part i of n, with the keyboard kb if not nil: formatted
// with MarkdownV2, or as its plain text when Telegram refuses the markup
// (resendPlain).
func (s *sender) sendOne(ctx context.Context, b *bot.Bot, chatID int64, p markup.Part, formatted bool, i, n int, kb *buttons.Keyboard) ([]string, error) {
	params := &bot.SendMessageParams{ChatID: chatID, Text: p.Text, ReplyMarkup: buttons.Markup(kb)}
	if formatted {
		params.ParseMode = models.ParseModeMarkdown
	}
	id, err := s.sendPart(ctx, b, chatID, params)
	switch {
	case err == nil:
		return []string{strconv.Itoa(id)}, nil
	case formatted:
		return s.resendPlain(ctx, b, chatID, p, err, i, n, kb)
	}
	return nil, err
}

// textParts is msg's text as the messages to send, and whether they are
// MarkdownV2. Parts that are only white space are left out: Telegram
// refuses them.
func (s *sender) textParts(msg core.OutboundMessage) ([]markup.Part, bool) {
	var parts []markup.Part
	switch {
	case msg.Format == core.FormatRichText && s.formatted():
		for _, p := range markup.SplitTelegram(msg.Text, maxMessageLength) {
			if strings.TrimSpace(p.Text) != "" {
				parts = append(parts, p)
			}
		}
		return parts, true
	case msg.Format == core.FormatRichText:
		// SplitPlain counts runes; Telegram counts UTF-16 units, so a
		// part heavy with emoji is cut again.
		for _, p := range markup.SplitPlain(msg.Text, maxMessageLength) {
			for _, q := range splitMessage(p.Text, maxMessageLength) {
				parts = append(parts, markup.Part{Text: q, Plain: q})
			}
		}
		return parts, false
	}
	for _, q := range splitMessage(msg.Text, maxMessageLength) {
		parts = append(parts, markup.Part{Text: q, Plain: q})
	}
	return parts, false
}

// resendPlain handles a formatted part that failed with err: when Telegram
// refused its markup ("can't parse entities"), the failure is logged with
// the byte offset Telegram named and the part's plain text goes instead,
// without a parse mode (split again should it be over the limit). Any
// other error is returned as it is. part and parts number the part for
// the log; the keyboard kb goes on the last message.
func (s *sender) resendPlain(ctx context.Context, b *bot.Bot, chatID int64, p markup.Part, err error, part, parts int, kb *buttons.Keyboard) ([]string, error) {
	offset, refused := parseEntitiesOffset(err)
	if !refused {
		return nil, err
	}
	s.log.Warn("telegram refused a message's markup; sending it again as plain text",
		"chat_id", chatID, "part", part+1, "parts", parts, "byte_offset", offset, "err", err)
	var ids []string
	plain := splitMessage(p.Plain, maxMessageLength)
	if len(plain) == 0 {
		return nil, fmt.Errorf("sending the plain text of a refused message: %w", err)
	}
	for j, q := range plain {
		params := &bot.SendMessageParams{ChatID: chatID, Text: q}
		if j == len(plain)-1 {
			params.ReplyMarkup = buttons.Markup(kb)
		}
		id, err := s.sendPart(ctx, b, chatID, params)
		if err != nil {
			return ids, fmt.Errorf("sending the plain text of a refused message: %w", err)
		}
		ids = append(ids, strconv.Itoa(id))
	}
	return ids, nil
}

// entitiesOffset finds the byte offset in Telegram's "can't parse
// entities: ... at byte offset N".
var entitiesOffset = regexp.MustCompile(`byte offset (\d+)`)

// parseEntitiesOffset reports whether err is Telegram refusing a text's
// markup (400 "Bad Request: can't parse entities: ..."), and the byte
// offset it names (-1 when it names none, as for a reserved character).
func parseEntitiesOffset(err error) (int, bool) {
	if err == nil || !strings.Contains(err.Error(), "can't parse entities") {
		return 0, false
	}
	m := entitiesOffset.FindStringSubmatch(err.Error())
	if m == nil {
		return -1, true
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return -1, true
	}
	return n, true
}

// sendPart sends one message to chatID, retrying what a retry can fix.
func (s *sender) sendPart(ctx context.Context, b *bot.Bot, chatID int64, params *bot.SendMessageParams) (int, error) {
	return s.deliver(ctx, "sending telegram message", chatID, func(ctx context.Context) (*models.Message, error) {
		return b.SendMessage(ctx, params)
	})
}

// deliver makes a call that creates one message in chatID (sendMessage,
// sendPhoto) and returns the message's id, retrying what a retry can fix:
// after a 429 the delay Telegram asks for, after a 5xx or a refused
// connection with backoff. Anything else fails at once, permanently when
// retrying cannot help. Every attempt first waits for its slot at the
// send_rate pace (a reply ahead of scheduled sends). what names the call
// in errors.
func (s *sender) deliver(ctx context.Context, what string, chatID int64, call func(context.Context) (*models.Message, error)) (int, error) {
	var status *statusBox
	pacer, chat := s.sendPacer(), strconv.FormatInt(chatID, 10)
	m, err := retry.Do(ctx, s.retryPolicy(), what, []any{"chat_id", chatID}, func(ctx context.Context) (*models.Message, error) {
		// A retry after a 429 is one more message to Telegram: it waits
		// its turn too.
		if err := pacer.Wait(ctx, chat); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		rctx, box := withStatus(ctx)
		status = box
		return call(rctx)
	}, func(err error) retry.Verdict { return s.judge(err, status.code, s.sendError(what, err)) })
	if err != nil {
		return 0, err
	}
	if m == nil {
		return 0, fmt.Errorf("%s: no message in the answer", what)
	}
	return m.ID, nil
}

// retryPolicy is how the adapter retries a Bot API call.
func (st *state) retryPolicy() retry.Policy {
	return retry.Policy{RateLimits: st.maxRateLimitRetries, Failures: st.maxServerRetries, Backoff: st.serverBackoff,
		Clock: st.clock, Log: st.log, Scrub: st.scrub, Platform: "telegram"}
}

// judge reads a failed Bot API call that answered status: a 429 waits
// what Telegram asks (at least a second), a 5xx or a refused connection
// backs off, anything else fails with final.
func (st *state) judge(err error, status int, final error) retry.Verdict {
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tooMany):
		return retry.Verdict{Kind: retry.RateLimited, After: time.Duration(max(tooMany.RetryAfter, 1)) * time.Second}
	case retryable(err, status):
		return retry.Verdict{Kind: retry.Transient}
	}
	return retry.Verdict{Kind: retry.Fail, Err: final}
}

// retryable reports whether a failed request may be repeated: the server
// answered 5xx (it did not take the message), or the connection could not
// even be made.
func retryable(err error, status int) bool {
	if status >= 500 {
		return true
	}
	var op *net.OpError
	return status == 0 && errors.As(err, &op) && op.Op == "dial"
}

// sendError explains a Bot API error; the ones retrying cannot fix are
// *core.PermanentError.
func (st *state) sendError(what string, err error) error {
	var migrate *bot.MigrateError
	switch {
	case errors.Is(err, bot.ErrorForbidden):
		return &core.PermanentError{
			Reason: "telegram refused delivery: the user blocked the bot or deactivated their account",
			Err:    st.scrub(err),
		}
	case errors.As(err, &migrate):
		return &core.PermanentError{Reason: "the chat is a group that became a supergroup; the bot only talks in private chats", Err: st.scrub(err)}
	case errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "chat not found"):
		return &core.PermanentError{
			Reason: "chat not found: Telegram only delivers to users who have started a chat with the bot",
			Err:    st.scrub(err),
		}
	case errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "message is too long"):
		return &core.PermanentError{Reason: "message is too long for Telegram", Err: st.scrub(err)}
	case errors.Is(err, bot.ErrorBadRequest):
		return &core.PermanentError{Reason: "telegram rejected the request", Err: st.scrub(err)}
	case errors.Is(err, bot.ErrorUnauthorized):
		return fmt.Errorf("%s: unauthorized (is the token revoked?)", what)
	default:
		return fmt.Errorf("%s: %w", what, st.scrub(err))
	}
}

// parseChatID reads a channel thread id as a Telegram chat id.
func parseChatID(threadID string) (int64, error) {
	id, err := strconv.ParseInt(threadID, 10, 64)
	if err != nil || id == 0 {
		return 0, &core.PermanentError{Reason: fmt.Sprintf("channel thread id %q is not a telegram chat id", threadID)}
	}
	return id, nil
}

// Typing shows "typing…" in the chat for about 5 seconds (one
// sendChatAction); the core repeats it while a turn runs.
func (s *sender) Typing(ctx context.Context, channelThreadID string) error {
	b, err := s.live()
	if err != nil {
		return fmt.Errorf("sending telegram typing action: %w", err)
	}
	chatID, err := parseChatID(channelThreadID)
	if err != nil {
		return err
	}
	_, err = b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping})
	if err != nil {
		return s.sendError("sending telegram typing action", err)
	}
	return nil
}
