package telegramtest

import "github.com/go-telegram/bot/models"

// ForgeTap is Tap with any callback_data, whether or not the message shows
// a button with it: what a modified client sends, or a client showing a
// keyboard the bot has replaced since, or buttons the bot sent before its
// database was replaced. A bot must take a callback's data as a claim to
// check against its own record. The query is a real one:
// answerCallbackQuery takes its answer as it takes Tap's. The message must
// still be one the bot sent in from's private chat.
func (s *callbackAPI) ForgeTap(from User, messageID int, data string) (models.Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tapLocked(s.touchChat(privateChat(from)), from, messageID, data, false)
}
