package telegramtest

import (
	"encoding/json"
	"strings"

	"github.com/go-telegram/bot/models"
)

// offByDefault are the update kinds Telegram sends only to a bot that
// names them in allowed_updates.
var offByDefault = map[string]bool{
	models.AllowedUpdateChatMember:           true,
	models.AllowedUpdateMessageReaction:      true,
	models.AllowedUpdateMessageReactionCount: true,
}

// setAllowed keeps the allowed_updates of a getUpdates or setWebhook call,
// as Telegram does: left out, the last list holds; an empty list is the
// default (every kind but offByDefault's). Callers hold s.mu.
func (s *state) setAllowed(p params) *Fault {
	raw := strings.TrimSpace(p["allowed_updates"])
	if raw == "" {
		return nil
	}
	var kinds []string
	if err := json.Unmarshal([]byte(raw), &kinds); err != nil {
		f := badRequest("can't parse allowed updates JSON object")
		return &f
	}
	if len(kinds) == 0 {
		s.allowed = nil
		return nil
	}
	s.allowed = map[string]bool{}
	for _, k := range kinds {
		s.allowed[k] = true
	}
	return nil
}

// allows reports whether updates of kind reach the bot now.
func (s *state) allows(kind string) bool {
	if s.allowed == nil {
		return !offByDefault[kind]
	}
	return s.allowed[kind]
}

// pushKind queues an update of kind (an allowed_updates name) unless the
// bot's allowed_updates leave that kind out: then Telegram never sends it,
// and the fake counts it (Dropped). Callers hold s.mu.
func (s *state) pushKind(q queuedUpdate, kind string) {
	if !s.allows(kind) {
		s.dropped++
		s.notify()
		return
	}
	s.push(q)
}

// updateKind names the field u carries, as allowed_updates names it.
func updateKind(u models.Update) string {
	switch {
	case u.Message != nil:
		return models.AllowedUpdateMessage
	case u.EditedMessage != nil:
		return models.AllowedUpdateEditedMessage
	case u.ChannelPost != nil:
		return models.AllowedUpdateChannelPost
	case u.EditedChannelPost != nil:
		return models.AllowedUpdateEditedChannelPost
	case u.CallbackQuery != nil:
		return models.AllowedUpdateCallbackQuery
	case u.MessageReaction != nil:
		return models.AllowedUpdateMessageReaction
	}
	return ""
}

// Dropped returns how many updates the helpers made that never reached
// the bot because its allowed_updates left their kind out.
func (s *updateFeed) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}
