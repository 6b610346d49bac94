package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakewait"
)

// botReactionEmoji is the set of emoji Telegram lets a bot react with
// (the Bot API's ReactionTypeEmoji); any other is REACTION_INVALID.
var botReactionEmoji = strings.Fields("👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤\u200d🔥 " +
	"🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨\u200d💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 " +
	"🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷\u200d♂ 🤷 🤷\u200d♀ 😡")

// Telegram's answers to a reaction it cannot set.
const (
	reactionInvalid  = "REACTION_INVALID"
	reactionsTooMany = "REACTIONS_TOO_MANY"
	reactMissing     = "message to react not found"
)

// reactionAPI takes setMessageReaction: the bot's reaction on a message
// of a chat, one at most (a bot is not a Premium user).
type reactionAPI struct{ *state }

// setMessageReaction validates like Telegram (the reaction list, the
// chat, a message that is there), then sets the bot's reaction on the
// message: an empty or absent list takes it back.
func (s *reactionAPI) setMessageReaction(_ context.Context, p params) (any, *Fault) {
	var list []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if raw := strings.TrimSpace(p["reaction"]); raw != "" && json.Unmarshal([]byte(raw), &list) != nil {
		f := badRequest("can't parse reaction types JSON object")
		return nil, &f
	}
	if len(list) > 1 {
		f := badRequest(reactionsTooMany)
		return nil, &f
	}
	emoji := ""
	if len(list) == 1 {
		if list[0].Type != "emoji" || !slices.Contains(botReactionEmoji, list[0].Emoji) {
			f := badRequest(reactionInvalid)
			return nil, &f
		}
		emoji = list[0].Emoji
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, f := s.chatTarget(p)
	if f != nil {
		return nil, f
	}
	id, _, f := p.int("message_id")
	if f != nil {
		return nil, f
	}
	k := msgKey{cs.chat.ID, int(id)}
	if id <= 0 || int(id) > cs.lastMsgID || s.msgs.deleted[k] {
		f := badRequest(reactMissing)
		return nil, &f
	}
	if emoji == "" {
		delete(s.botReactions, k)
	} else {
		s.botReactions[k] = emoji
	}
	s.notify()
	return true, nil
}

// BotReaction is the bot's reaction on message messageID of chat chatID,
// "" for none.
func (s *reactionAPI) BotReaction(chatID int64, messageID int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.botReactions[msgKey{chatID, messageID}]
}

// WaitBotReaction waits until the bot's reaction on message messageID of
// chat chatID is want ("": none); after timeout it fails the test (call
// it from the test goroutine).
func (s *reactionAPI) WaitBotReaction(t testing.TB, chatID int64, messageID int, want string, timeout time.Duration) {
	t.Helper()
	k := msgKey{chatID, messageID}
	fakewait.Until(t, "telegramtest", &s.mu, func() <-chan struct{} { return s.changed }, s.done, timeout,
		func() bool { return s.botReactions[k] == want },
		func() string {
			return fmt.Sprintf("the bot's reaction %q on message %d of chat %d, has %q", want, messageID, chatID, s.BotReaction(chatID, messageID))
		})
}
