package telegramtest

import (
	"context"
	"encoding/json"
	"time"

	"github.com/go-telegram/bot/models"
)

// Edit is one editMessageText call the fake accepted.
type Edit struct {
	ChatID    int64
	MessageID int
	// Text is the text parameter as the bot sent it; Plain is what the
	// user reads after the edit, Entities its styles.
	Text      string
	Plain     string
	ParseMode string
	Entities  []models.MessageEntity
	// Buttons is the inline keyboard the message shows after the edit:
	// an edit without reply_markup removes it, as on Telegram.
	Buttons [][]Button
	At      time.Time
}

// msgKey names one message: its chat and its id there.
type msgKey struct {
	chat int64
	id   int
}

// messageBook holds each message as the user sees it now (edited, or
// gone), beside the history of sends.
type messageBook struct {
	current map[msgKey]SentMessage
	deleted map[msgKey]bool
	edits   map[msgKey][]Edit
}

// editAPI takes editMessageText and deleteMessage and shows what the chat
// looks like after them.
type editAPI struct{ *state }

// Telegram's answers to edits and deletions that change nothing.
const (
	notModified = "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
	editMissing = "message to edit not found"
	delMissing  = "message to delete not found"
)

// message finds a live message of the bot from chat_id and message_id.
// Callers hold s.mu.
func (s *state) message(p params, missing string) (msgKey, SentMessage, *Fault) {
	cs, f := s.chatTarget(p)
	if f != nil {
		return msgKey{}, SentMessage{}, f
	}
	id, ok, f := p.int("message_id")
	if f != nil {
		return msgKey{}, SentMessage{}, f
	}
	if !ok {
		bad := badRequest("message identifier is not specified")
		return msgKey{}, SentMessage{}, &bad
	}
	k := msgKey{cs.chat.ID, int(id)}
	m, known := s.msgs.current[k]
	if !known || s.msgs.deleted[k] {
		bad := badRequest(missing)
		return msgKey{}, SentMessage{}, &bad
	}
	return k, m, nil
}

// editMessageText validates like Telegram (text, entities, length, a
// message of the bot's that has text, a change), then changes the
// message's text and records the edit. The message's keyboard becomes the
// edit's reply_markup: none when it names none.
func (s *editAPI) editMessageText(_ context.Context, p params) (any, *Fault) {
	if p["inline_message_id"] != "" {
		f := badRequest("the fake only edits messages by chat_id and message_id")
		return nil, &f
	}
	text, parseMode := p["text"], p["parse_mode"]
	if parseMode != "" {
		if f := s.takeMarkupFault(text); f != nil {
			return nil, f
		}
	}
	plain, ents, f := messageText(text, parseMode)
	if f != nil {
		return nil, f
	}
	buttons, f := replyMarkup(p)
	if f != nil {
		return nil, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, m, f := s.message(p, editMissing)
	switch {
	case f != nil:
		return nil, f
	case m.Photo != "":
		bad := badRequest("there is no text in the message to edit")
		return nil, &bad
	case m.Plain == plain && sameEntities(m.Entities, ents) && sameButtons(m.Buttons, buttons):
		bad := badRequest(notModified)
		return nil, &bad
	}
	at := s.now()
	m.Text, m.Plain, m.ParseMode, m.Entities, m.Buttons, m.EditedAt = text, plain, parseMode, ents, buttons, at
	s.msgs.current[k] = m
	s.msgs.edits[k] = append(s.msgs.edits[k], Edit{
		ChatID: k.chat, MessageID: k.id, Text: text, Plain: plain, ParseMode: parseMode, Entities: ents, Buttons: buttons, At: at,
	})
	s.notify()
	return s.messageModel(k, m), nil
}

// messageModel is message m (key k) as the Bot API returns it, with its
// inline keyboard encoded as Telegram encodes it (callback buttons with
// text and callback_data alone). Callers hold s.mu.
func (s *state) messageModel(k msgKey, m SentMessage) rawResult {
	bot := s.bot
	msg := models.Message{
		ID: k.id, From: &bot, Date: int(m.At.Unix()),
		Chat: s.chats[k.chat].chat, Text: m.Plain, Entities: m.Entities,
	}
	if !m.EditedAt.IsZero() {
		msg.EditDate = int(m.EditedAt.Unix())
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		panic("telegramtest: encoding a message: " + err.Error()) // models.Message always encodes
	}
	if len(m.Buttons) == 0 {
		return raw
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	fields["reply_markup"] = keyboardJSON(m.Buttons)
	raw, _ = json.Marshal(fields)
	return raw
}

// keyboardJSON encodes buttons as an InlineKeyboardMarkup.
func keyboardJSON(buttons [][]Button) json.RawMessage {
	rows := make([][]wireButton, len(buttons))
	for i, r := range buttons {
		for _, b := range r {
			wb := wireButton{Text: b.Text, URL: b.URL}
			if b.Data != "" {
				wb.CallbackData = &b.Data
			}
			rows[i] = append(rows[i], wb)
		}
	}
	raw, _ := json.Marshal(map[string]any{"inline_keyboard": rows})
	return raw
}

// sameEntities reports whether two entity lists style a text alike.
func sameEntities(a, b []models.MessageEntity) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Offset != b[i].Offset || a[i].Length != b[i].Length || a[i].URL != b[i].URL {
			return false
		}
	}
	return true
}

// deleteMessage removes a message of the bot's from the chat.
func (s *editAPI) deleteMessage(_ context.Context, p params) (any, *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, _, f := s.message(p, delMissing)
	if f != nil {
		return nil, f
	}
	s.msgs.deleted[k] = true
	s.notify()
	return true, nil
}

// Edits returns the edits of message messageID in chatID, in order.
func (s *editAPI) Edits(chatID int64, messageID int) []Edit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Edit(nil), s.msgs.edits[msgKey{chatID, messageID}]...)
}

// Messages returns the bot's messages in chatID as the user sees them
// now, in order: edited ones with their latest text (EditedAt set),
// deleted ones left out. Sent keeps each message as it was sent.
func (s *editAPI) Messages(chatID int64) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentMessage
	for _, j := range s.sentIdx[chatID] {
		k := msgKey{chatID, s.sent[j].MessageID}
		if !s.msgs.deleted[k] {
			out = append(out, s.msgs.current[k])
		}
	}
	return out
}

// Message returns message messageID of chatID as the user sees it now;
// false when the bot never sent it or deleted it.
func (s *editAPI) Message(chatID int64, messageID int) (SentMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := msgKey{chatID, messageID}
	m, ok := s.msgs.current[k]
	if !ok || s.msgs.deleted[k] {
		return SentMessage{}, false
	}
	return m, true
}

// Deleted reports whether the bot deleted message messageID of chatID.
func (s *editAPI) Deleted(chatID int64, messageID int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.msgs.deleted[msgKey{chatID, messageID}]
}
