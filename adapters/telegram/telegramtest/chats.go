package telegramtest

import (
	"context"

	"github.com/go-telegram/bot/models"
)

// chatDirectory makes chats known to the fake, so the bot may write to
// them, and answers getChat.
type chatDirectory struct{ *state }

// StartedBy makes user have started the bot (pressed Start) without
// writing anything since: their private chat is known, so getChat finds it
// and the bot may write to them first. SendPrivate does this by itself.
func (s *chatDirectory) StartedBy(user User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchChat(privateChat(user))
	s.notify()
}

// getChat answers what the fake knows about a chat, as Telegram does for
// chats the bot is in: a user who never started the bot is "chat not
// found" (400), one who blocked it 403.
func (s *chatDirectory) getChat(_ context.Context, p params) (any, *Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, f := s.chatTarget(p)
	if f != nil {
		return nil, f
	}
	c := cs.chat
	return models.ChatFullInfo{
		ID:        c.ID,
		Type:      c.Type,
		Title:     c.Title,
		Username:  c.Username,
		FirstName: c.FirstName,
		LastName:  c.LastName,
		// Telegram always sends it.
		MaxReactionCount: 11,
	}, nil
}

// AddChat makes chatID known without an update, so the bot may write to it
// first. Positive ids are private chats, negative ids groups.
func (s *chatDirectory) AddChat(chatID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind := models.ChatTypePrivate
	if chatID < 0 {
		kind = models.ChatTypeGroup
	}
	s.touchChat(models.Chat{ID: chatID, Type: kind})
}
