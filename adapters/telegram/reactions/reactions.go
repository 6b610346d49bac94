// Package reactions shapes the Telegram side of reactions
// (core/reactions.go): which emoji a bot may set with setMessageReaction,
// the emoji a model means mapped onto them, and the changes a
// message_reaction update carries. The telegram adapter sends and
// receives; this package holds no state and calls nothing.
//
// Telegram lets a bot react with a fixed set of emoji only (the Bot API's
// ReactionTypeEmoji) and answers 400 REACTION_INVALID to any other. An
// emoji is first read without its presentation selectors and skin tones
// (❤️ is ❤, 👍🏽 is 👍), then close variants take the nearest emoji of
// the set (😀 😊 🙂 → 😁, 😂 → 🤣, ✅ → 👌, 💙 → ❤); anything else is
// refused before a call, with the set named, so the model can pick again.
package reactions

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// set is Telegram's set of emoji a bot may react with, in the Bot API's
// order (https://core.telegram.org/bots/api#reactiontypeemoji).
var set = []string{
	"👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏", "👌",
	"🕊", "🤡", "🥱", "🥴", "😍", "🐳", "❤\u200d🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐",
	"🍓", "🍾", "💋", "🖕", "😈", "😴", "😭", "🤓", "👻", "👨\u200d💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍",
	"🤗", "🫡", "🎅", "🎄", "☃", "💅", "🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾",
	"🤷\u200d♂", "🤷", "🤷\u200d♀", "😡",
}

// near maps emoji outside the set (read bare) to the one of the set that
// says the same.
var near = map[string]string{
	"😀": "😁", "😃": "😁", "😄": "😁", "😆": "😁", "🙂": "😁", "😊": "😁", "☺": "😁", "😉": "😁", "😅": "😁",
	"😂": "🤣",
	"✅": "👌", "✔": "👌", "☑": "👌", "🆗": "👌",
	"💪": "👍", "👆": "👍",
	"❌": "👎", "✖": "👎",
	"♥": "❤", "💖": "❤", "💗": "❤", "💓": "❤", "💕": "❤", "💞": "❤", "💝": "❤", "❣": "❤", "🧡": "❤",
	"💛": "❤", "💚": "❤", "💙": "❤", "💜": "❤", "🖤": "❤", "🤍": "❤", "🤎": "❤", "🫶": "❤",
	"🙌": "👏", "🥳": "🎉", "🎊": "🎉",
	"😮": "😱", "😲": "😱", "😯": "😱", "😧": "😨", "😰": "😨",
	"😠": "😡", "😞": "😢", "😔": "😢", "😟": "😢", "🙁": "😢", "☹": "😢", "😥": "😢", "🥲": "😢",
	"🧐": "🤔", "🤞": "🙏", "🤤": "😍", "😻": "😍", "👁": "👀",
	"🧑\u200d💻": "👨\u200d💻", "👩\u200d💻": "👨\u200d💻", "💻": "👨\u200d💻",
}

// Allowed is Telegram's set of emoji a bot may react with.
func Allowed() []string { return slices.Clone(set) }

// Pick is the emoji of Telegram's set that shows emoji; for one none
// shows, a *core.PermanentError naming the set to pick from.
func Pick(emoji string) (string, error) {
	e := bare(strings.TrimSpace(emoji))
	if slices.Contains(set, e) {
		return e, nil
	}
	if n, ok := near[e]; ok {
		return n, nil
	}
	return "", &core.PermanentError{Reason: fmt.Sprintf(
		"telegram cannot react with %q: a bot's reactions are a fixed set; pick one of %s", emoji, strings.Join(set, " "))}
}

// bare is e without variation selectors and skin-tone modifiers, which
// Telegram's set does not carry.
func bare(e string) string {
	return strings.Map(func(r rune) rune {
		if r == '\uFE0F' || r == '\uFE0E' || (r >= 0x1F3FB && r <= 0x1F3FF) {
			return -1
		}
		return r
	}, e)
}

// Of is setMessageReaction's reaction parameter for emoji: the one
// reaction, or none for "" (the bot's reaction taken back).
func Of(emoji string) []models.ReactionType {
	if emoji == "" {
		return nil
	}
	return []models.ReactionType{{Type: models.ReactionTypeTypeEmoji,
		ReactionTypeEmoji: &models.ReactionTypeEmoji{Type: models.ReactionTypeTypeEmoji, Emoji: emoji}}}
}

// Change is one emoji a user added to a message, or took back.
type Change struct {
	Emoji   string
	Removed bool
}

// Changes are the emoji a message_reaction update took back (from old)
// and added (in now): Telegram sends the whole set before and after.
// Custom and paid reactions have no emoji and are left out.
func Changes(old, now []models.ReactionType) []Change {
	before, after := emojiOf(old), emojiOf(now)
	var out []Change
	for _, e := range before {
		if !slices.Contains(after, e) {
			out = append(out, Change{Emoji: e, Removed: true})
		}
	}
	for _, e := range after {
		if !slices.Contains(before, e) {
			out = append(out, Change{Emoji: e})
		}
	}
	return out
}

// emojiOf are the emoji of reactions, in order.
func emojiOf(rs []models.ReactionType) []string {
	var out []string
	for _, r := range rs {
		if r.Type == models.ReactionTypeTypeEmoji && r.ReactionTypeEmoji != nil && r.ReactionTypeEmoji.Emoji != "" {
			out = append(out, r.ReactionTypeEmoji.Emoji)
		}
	}
	return out
}
