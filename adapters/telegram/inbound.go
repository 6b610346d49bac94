package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/telegram/attach"
	"github.com/parleybot/parley/adapters/telegram/buttons"
	"github.com/parleybot/parley/adapters/telegram/reactions"
	"github.com/parleybot/parley/core"
)

// inbound is the adapter's receiving side: it reads updates, from the
// getUpdates loop or the webhook, and hands private messages to the core.
type inbound struct {
	*state
	// send marks a tapped choice on its message (setKeyboard).
	send *sender
}

// update is one update of a getUpdates batch, decoded.
type update struct {
	id int64
	// ok is false when the update has no id: it cannot be confirmed.
	ok bool
	// upd is nil when the update cannot be decoded: it is skipped.
	upd *models.Update
}

// chat is the chat the update's message (or tapped message) belongs to,
// 0 for any other update: a tap is handled after the messages its chat
// sent before it.
func (u update) chat() int64 {
	switch {
	case u.upd == nil:
		return 0
	case u.upd.Message != nil:
		return u.upd.Message.Chat.ID
	case u.upd.EditedMessage != nil:
		return u.upd.EditedMessage.Chat.ID
	case u.upd.MessageReaction != nil:
		return u.upd.MessageReaction.Chat.ID
	case u.upd.CallbackQuery != nil:
		chat, _ := buttons.Chat(u.upd.CallbackQuery)
		return chat.ID
	}
	return 0
}

// decodeRaw decodes one update of a batch; one it cannot read is logged
// and left with a nil upd.
func (in *inbound) decodeRaw(raw json.RawMessage) update {
	var head struct {
		UpdateID *int64 `json:"update_id"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.UpdateID == nil {
		in.log.Warn("skipping a telegram update without update_id", "bytes", len(raw))
		return update{}
	}
	var upd models.Update
	if err := json.Unmarshal(raw, &upd); err != nil {
		in.log.Warn("skipping a telegram update that cannot be decoded", "update_id", *head.UpdateID, "err", err)
		return update{id: *head.UpdateID, ok: true}
	}
	return update{id: *head.UpdateID, ok: true, upd: &upd}
}

// handleUpdate hands upd to the core if it is a message with text or a
// file in a private chat, or a tap on a button (handleTap). It returns the
// core's error, and nothing else. A panic, whatever its cause, is logged
// and the update skipped, so a strange update never stops the bot.
func (in *inbound) handleUpdate(ctx context.Context, upd *models.Update) (err error) {
	defer func() {
		if r := recover(); r != nil {
			in.log.Error("panic while handling a telegram update", "update_id", upd.ID, "panic", r, "stack", string(debug.Stack()))
			err = nil // skipped: handling it again would panic again
		}
	}()
	if upd.CallbackQuery != nil {
		// A tap is acknowledged whatever becomes of it: never an error
		// that would have it delivered again.
		in.handleTap(ctx, upd.ID, upd.CallbackQuery)
		return nil
	}
	if upd.EditedMessage != nil {
		return in.handleEdit(ctx, upd.ID, upd.EditedMessage)
	}
	if upd.MessageReaction != nil {
		return in.handleReaction(ctx, upd.ID, upd.MessageReaction)
	}
	msg, ok := in.normalise(upd)
	if !ok {
		return nil
	}
	in.mu.Lock()
	h := in.handler
	in.mu.Unlock()
	if h == nil {
		return nil
	}
	if err := h.HandleInbound(ctx, msg); err != nil {
		if ctx.Err() == nil {
			in.log.Error("handing a telegram message to the core", "update_id", upd.ID, "chat_id", msg.ChannelThreadID, "err", err)
		}
		return fmt.Errorf("handing telegram update %d to the core: %w", upd.ID, err)
	}
	return nil
}

// normalise turns a private message with text, a caption or a file into
// a core.InboundMessage; for anything else it logs why at debug level and
// reports false.
func (in *inbound) normalise(upd *models.Update) (core.InboundMessage, bool) {
	// Only the updates it ignores are logged: the logger with the
	// update's id is made for those alone (a With on a text or JSON
	// handler formats its attributes at once, ~7 µs a DM measured).
	log := func() *slog.Logger { return in.log.With("update_id", upd.ID) }
	m := upd.Message
	if m == nil {
		log().Debug("ignoring a telegram update that is not a new message", "kind", updateKind(upd))
		return core.InboundMessage{}, false
	}
	switch {
	case m.Chat.ID == 0:
		log().Warn("skipping a malformed telegram message: no chat")
		return core.InboundMessage{}, false
	case m.Chat.Type != models.ChatTypePrivate:
		log().Debug("ignoring a telegram message outside a private chat", "chat_type", m.Chat.Type, "chat_id", m.Chat.ID)
		return core.InboundMessage{}, false
	case m.From == nil || m.From.ID == 0:
		log().Warn("skipping a malformed telegram message: no sender", "chat_id", m.Chat.ID)
		return core.InboundMessage{}, false
	case m.From.IsBot || m.From.ID == in.botID:
		log().Debug("ignoring a telegram message from a bot", "chat_id", m.Chat.ID, "from", m.From.ID)
		return core.InboundMessage{}, false
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	files := attach.Of(m)
	// A photo, a voice note or a sticker is a message in its own right
	// even without a caption; only a message with neither text nor a
	// file (a location, a contact, a poll) has nothing for the core.
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		log().Debug("ignoring a telegram message without text or a file", "chat_id", m.Chat.ID)
		return core.InboundMessage{}, false
	}
	// Telegram never sends more than 4096 characters; the core truncates
	// anything over its own limit and records that it did.
	return core.InboundMessage{
		Platform:          Platform,
		ChannelThreadID:   strconv.FormatInt(m.Chat.ID, 10),
		ChannelUserID:     strconv.FormatInt(m.From.ID, 10),
		DisplayName:       displayName(m.From),
		Text:              text,
		PlatformMessageID: strconv.Itoa(m.ID),
		SentAt:            time.Unix(int64(m.Date), 0).UTC(),
		Direct:            true,
		Attachments:       files,
	}, true
}

// displayName is "First Last", or the username when both are empty.
func displayName(u *models.User) string {
	if name := strings.TrimSpace(u.FirstName + " " + u.LastName); name != "" {
		return name
	}
	return u.Username
}

// updateKind names the field an update carries, for logs.
func updateKind(upd *models.Update) string {
	switch {
	case upd.EditedMessage != nil:
		return "edited_message"
	case upd.ChannelPost != nil:
		return "channel_post"
	case upd.EditedChannelPost != nil:
		return "edited_channel_post"
	case upd.CallbackQuery != nil:
		return "callback_query"
	case upd.MyChatMember != nil:
		return "my_chat_member"
	case upd.BusinessMessage != nil:
		return "business_message"
	default:
		return "other"
	}
}

// handleEdit hands a user's edit of a private message to the core
// (core.ChangeHandler): the stored text follows. Telegram has no update
// for a deletion in a private chat, so a deleted message stays as it was.
// An edit outside a private chat, by a bot, or without text is ignored.
func (in *inbound) handleEdit(ctx context.Context, id int64, m *models.Message) error {
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	if m.Chat.Type != models.ChatTypePrivate || m.From == nil || m.From.IsBot || text == "" {
		return nil
	}
	in.mu.Lock()
	h := in.handler
	in.mu.Unlock()
	if h == nil {
		return nil
	}
	at := time.Unix(int64(m.EditDate), 0).UTC()
	if m.EditDate == 0 {
		at = in.clock.Now()
	}
	err := h.HandleChange(ctx, core.MessageChange{Platform: Platform, ChannelThreadID: strconv.FormatInt(m.Chat.ID, 10),
		ChannelUserID: strconv.FormatInt(m.From.ID, 10), PlatformMessageID: strconv.Itoa(m.ID), Text: text, At: at})
	if err != nil && ctx.Err() == nil {
		in.log.Error("handing a telegram edit to the core", "update_id", id, "chat_id", m.Chat.ID, "err", err)
		return fmt.Errorf("handing telegram edit %d to the core: %w", id, err)
	}
	return nil
}

// handleReaction hands a user's reactions to one of the bot's messages in
// a private chat to the core (core.ReactionHandler): Telegram sends the
// whole set before and after, so each emoji added and each taken back is
// one core.Reaction. Custom and paid reactions have no emoji and are
// left out.
func (in *inbound) handleReaction(ctx context.Context, id int64, r *models.MessageReactionUpdated) error {
	if r.Chat.Type != models.ChatTypePrivate || r.User == nil || r.User.IsBot {
		return nil
	}
	in.mu.Lock()
	h := in.handler
	in.mu.Unlock()
	if h == nil {
		return nil
	}
	base := core.Reaction{Platform: Platform, ChannelThreadID: strconv.FormatInt(r.Chat.ID, 10),
		ChannelUserID: strconv.FormatInt(r.User.ID, 10), MessageID: strconv.Itoa(r.MessageID), At: time.Unix(int64(r.Date), 0).UTC()}
	for _, c := range reactions.Changes(r.OldReaction, r.NewReaction) {
		base.Emoji, base.Removed = c.Emoji, c.Removed
		if err := h.HandleReaction(ctx, base); err != nil && ctx.Err() == nil {
			in.log.Error("handing a telegram reaction to the core", "update_id", id, "chat_id", r.Chat.ID, "err", err)
			return fmt.Errorf("handing telegram reaction %d to the core: %w", id, err)
		}
	}
	return nil
}
