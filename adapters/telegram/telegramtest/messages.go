package telegramtest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
)

// maxTextLen is Telegram's limit on a message text, in UTF-16 code units
// after entity parsing.
const maxTextLen = 4096

// chatActions are the actions sendChatAction accepts.
var chatActions = map[string]bool{
	"typing": true, "upload_photo": true, "record_video": true, "upload_video": true,
	"record_voice": true, "upload_voice": true, "upload_document": true, "choose_sticker": true,
	"find_location": true, "record_video_note": true, "upload_video_note": true,
}

// chatAPI takes what the bot sends (sendMessage, sendPhoto,
// sendChatAction) and shows it to the test.
type chatAPI struct{ *state }

// chatTarget resolves chat_id to a known, unblocked chat. Callers hold s.mu.
func (s *state) chatTarget(p params) (*chatState, *Fault) {
	raw := strings.TrimSpace(p["chat_id"])
	if raw == "" {
		f := badRequest("chat_id is empty")
		return nil, &f
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err == nil && s.blocked[id] {
		f := BotBlocked()
		return nil, &f
	}
	cs := s.chats[id]
	if err != nil || cs == nil {
		f := badRequest("chat not found")
		return nil, &f
	}
	return cs, nil
}

// sendMessage validates like Telegram (empty text, entities, unknown chat,
// blocked user, length, an inline keyboard's buttons), then records the
// message and returns it.
func (s *chatAPI) sendMessage(_ context.Context, p params) (any, *Fault) {
	text := p["text"]
	parseMode := p["parse_mode"]
	if parseMode != "" {
		if f := s.takeMarkupFault(text); f != nil {
			return nil, f
		}
	}
	plain, ents, f := parseText(text, parseMode)
	if f != nil {
		return nil, f
	}
	if strings.TrimSpace(plain) == "" {
		f := badRequest("message text is empty")
		return nil, &f
	}
	replyTo, f := replyToID(p)
	if f != nil {
		return nil, f
	}
	buttons, f := replyMarkup(p)
	if f != nil {
		return nil, f
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	cs, f := s.chatTarget(p)
	if f != nil {
		return nil, f
	}
	if len(utf16.Encode([]rune(plain))) > maxTextLen {
		f := MessageTooLong()
		return nil, &f
	}
	bot := s.bot
	msg := s.newMessage(cs, &bot, plain)
	msg.Entities = ents
	s.recordLocked(SentMessage{
		ChatID:           cs.chat.ID,
		MessageID:        msg.ID,
		Text:             text,
		Plain:            plain,
		ParseMode:        parseMode,
		Entities:         ents,
		ReplyToMessageID: replyTo,
		Buttons:          buttons,
		At:               s.now(),
	})
	if buttons != nil {
		return s.messageModel(msgKey{cs.chat.ID, msg.ID}, s.msgs.current[msgKey{cs.chat.ID, msg.ID}]), nil
	}
	return msg, nil
}

// recordLocked keeps a message the bot sent. Callers hold s.mu.
func (s *state) recordLocked(m SentMessage) {
	s.sent = append(s.sent, m)
	s.msgs.current[msgKey{m.ChatID, m.MessageID}] = m
	// A message ends the draft the user saw.
	s.book.ended[m.ChatID] = len(s.book.drafts[m.ChatID])
	// Indexed per chat so that many waiters stay cheap under load.
	s.sentIdx[m.ChatID] = append(s.sentIdx[m.ChatID], len(s.sent)-1)
	s.notify()
}

// replyToID reads reply_parameters.message_id or reply_to_message_id.
func replyToID(p params) (int, *Fault) {
	if raw := p["reply_parameters"]; raw != "" {
		var rp models.ReplyParameters
		if err := json.Unmarshal([]byte(raw), &rp); err != nil {
			f := badRequest("can't parse reply parameters JSON object")
			return 0, &f
		}
		return rp.MessageID, nil
	}
	id, _, f := p.int("reply_to_message_id")
	return int(id), f
}

// sendChatAction records an action such as "typing".
func (s *chatAPI) sendChatAction(_ context.Context, p params) (any, *Fault) {
	action := p["action"]
	if !chatActions[action] {
		f := badRequest("wrong parameter action in request")
		return nil, &f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, f := s.chatTarget(p)
	if f != nil {
		return nil, f
	}
	s.actions[cs.chat.ID] = append(s.actions[cs.chat.ID], action)
	s.notify()
	return true, nil
}

// Sent returns the messages the bot sent to chatID, in order.
func (s *chatAPI) Sent(chatID int64) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentTo(chatID)
}

func (s *chatAPI) sentTo(chatID int64) []SentMessage {
	idx := s.sentIdx[chatID]
	if len(idx) == 0 {
		return nil
	}
	out := make([]SentMessage, len(idx))
	for i, j := range idx {
		out[i] = s.sent[j]
	}
	return out
}

// sentCount is len(sentTo(chatID)) without copying.
func (s *chatAPI) sentCount(chatID int64) int { return len(s.sentIdx[chatID]) }

// AllSent returns every message the bot sent, in order.
func (s *chatAPI) AllSent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// WaitSent waits until the bot has sent at least n messages to chatID and
// returns them all; after timeout it fails the test (call it from the test
// goroutine) with what did arrive.
func (s *chatAPI) WaitSent(t testing.TB, chatID int64, n int, timeout time.Duration) []SentMessage {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		var got []SentMessage
		if s.sentCount(chatID) >= n {
			got = s.sentTo(chatID)
		}
		changed := s.changed
		s.mu.Unlock()
		if got != nil {
			return got
		}
		select {
		case <-changed:
		case <-timer.C:
			got = s.Sent(chatID)
			t.Fatalf("telegramtest: waited %v for %d messages to chat %d, got %d: %+v", timeout, n, chatID, len(got), got)
			return got
		case <-s.done:
			got = s.Sent(chatID)
			t.Fatalf("telegramtest: server closed while waiting for %d messages to chat %d, got %d", n, chatID, len(got))
			return got
		}
	}
}

// ChatActions returns the actions the bot sent to chatID, in order.
func (s *chatAPI) ChatActions(chatID int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.actions[chatID]...)
}
