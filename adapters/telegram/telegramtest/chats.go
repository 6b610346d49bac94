package telegramtest

import (
	"context"

	"github.com/go-telegram/bot/models"
)

// StartedBy makes user have started the bot (pressed Start) without
// writing anything since: their private chat is known, so getChat finds it
// and the bot may write to them first. SendPrivate does this by itself.
func (s *Server) StartedBy(user User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touchChat(privateChat(user))
	s.notify()
}

// getChat answers what the fake knows about a chat, as Telegram does for
// chats the bot is in: a user who never started the bot is "chat not
// found" (400), one who blocked it 403.
func (s *Server) getChat(_ context.Context, p params) (any, *Fault) {
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
