package wire

import (
	"slices"
	"strings"
)

// Slack names its emoji (reactions come as "+1", "heart"; reactions.add
// takes a name). The model reads and writes Unicode emoji, so the common
// ones are mapped both ways by this table; a name it lacks (a custom
// emoji, a rare one) reaches the model as the name itself, and a Unicode
// emoji it lacks cannot be sent. The first name of an emoji is the one
// reactions.add is given; the others are the aliases Slack also uses.
var emojiNames = []Emoji{
	{"👍", []string{"+1", "thumbsup"}},
	{"👎", []string{"-1", "thumbsdown"}},
	{"❤\uFE0F", []string{"heart"}},
	{"🧡", []string{"orange_heart"}},
	{"💛", []string{"yellow_heart"}},
	{"💚", []string{"green_heart"}},
	{"💙", []string{"blue_heart"}},
	{"💜", []string{"purple_heart"}},
	{"🖤", []string{"black_heart"}},
	{"💔", []string{"broken_heart"}},
	{"😂", []string{"joy"}},
	{"🤣", []string{"rolling_on_the_floor_laughing", "rofl"}},
	{"😀", []string{"grinning"}},
	{"😃", []string{"smiley"}},
	{"😄", []string{"smile"}},
	{"😁", []string{"grin"}},
	{"😆", []string{"laughing", "satisfied"}},
	{"😅", []string{"sweat_smile"}},
	{"🙂", []string{"slightly_smiling_face"}},
	{"🙃", []string{"upside_down_face"}},
	{"😉", []string{"wink"}},
	{"😊", []string{"blush"}},
	{"😇", []string{"innocent"}},
	{"😍", []string{"heart_eyes"}},
	{"🥰", []string{"smiling_face_with_3_hearts"}},
	{"😘", []string{"kissing_heart"}},
	{"😎", []string{"sunglasses"}},
	{"🤔", []string{"thinking_face"}},
	{"🤨", []string{"face_with_raised_eyebrow"}},
	{"😐", []string{"neutral_face"}},
	{"😑", []string{"expressionless"}},
	{"🙄", []string{"face_with_rolling_eyes"}},
	{"😏", []string{"smirk"}},
	{"😬", []string{"grimacing"}},
	{"😌", []string{"relieved"}},
	{"😴", []string{"sleeping"}},
	{"🤯", []string{"exploding_head"}},
	{"🥳", []string{"partying_face"}},
	{"😕", []string{"confused"}},
	{"😟", []string{"worried"}},
	{"😮", []string{"open_mouth"}},
	{"😲", []string{"astonished"}},
	{"😳", []string{"flushed"}},
	{"🥺", []string{"pleading_face"}},
	{"😢", []string{"cry"}},
	{"😭", []string{"sob"}},
	{"😱", []string{"scream"}},
	{"😞", []string{"disappointed"}},
	{"😓", []string{"sweat"}},
	{"😩", []string{"weary"}},
	{"😤", []string{"triumph"}},
	{"😡", []string{"rage"}},
	{"😠", []string{"angry"}},
	{"🤗", []string{"hugging_face"}},
	{"🤝", []string{"handshake"}},
	{"🙏", []string{"pray"}},
	{"👏", []string{"clap"}},
	{"🙌", []string{"raised_hands"}},
	{"👋", []string{"wave"}},
	{"👌", []string{"ok_hand"}},
	{"✌\uFE0F", []string{"v"}},
	{"🤞", []string{"crossed_fingers", "hand_with_index_and_middle_fingers_crossed"}},
	{"💪", []string{"muscle"}},
	{"👀", []string{"eyes"}},
	{"🧠", []string{"brain"}},
	{"🎉", []string{"tada"}},
	{"🎊", []string{"confetti_ball"}},
	{"🎂", []string{"birthday"}},
	{"🎁", []string{"gift"}},
	{"🏆", []string{"trophy"}},
	{"🥇", []string{"first_place_medal"}},
	{"🔥", []string{"fire"}},
	{"✨", []string{"sparkles"}},
	{"⭐", []string{"star"}},
	{"🌟", []string{"star2"}},
	{"⚡", []string{"zap"}},
	{"💯", []string{"100"}},
	{"🚀", []string{"rocket"}},
	{"💡", []string{"bulb"}},
	{"✅", []string{"white_check_mark"}},
	{"✔\uFE0F", []string{"heavy_check_mark"}},
	{"☑\uFE0F", []string{"ballot_box_with_check"}},
	{"❌", []string{"x"}},
	{"❎", []string{"negative_squared_cross_mark"}},
	{"⚠\uFE0F", []string{"warning"}},
	{"❓", []string{"question"}},
	{"❗", []string{"exclamation", "heavy_exclamation_mark"}},
	{"⛔", []string{"no_entry"}},
	{"🚫", []string{"no_entry_sign"}},
	{"➕", []string{"heavy_plus_sign"}},
	{"➖", []string{"heavy_minus_sign"}},
	{"👉", []string{"point_right"}},
	{"👆", []string{"point_up_2"}},
	{"⏳", []string{"hourglass_flowing_sand"}},
	{"⌛", []string{"hourglass"}},
	{"⏰", []string{"alarm_clock"}},
	{"📅", []string{"date"}},
	{"📆", []string{"calendar"}},
	{"📌", []string{"pushpin"}},
	{"📎", []string{"paperclip"}},
	{"📝", []string{"memo", "pencil"}},
	{"✏\uFE0F", []string{"pencil2"}},
	{"📚", []string{"books"}},
	{"📧", []string{"e-mail", "email"}},
	{"🔔", []string{"bell"}},
	{"🔒", []string{"lock"}},
	{"🔑", []string{"key"}},
	{"💰", []string{"moneybag"}},
	{"🎵", []string{"musical_note"}},
	{"🍵", []string{"tea"}},
	{"☕", []string{"coffee"}},
	{"🍺", []string{"beer"}},
	{"🍻", []string{"beers"}},
	{"🍕", []string{"pizza"}},
	{"🍰", []string{"cake"}},
	{"🍎", []string{"apple"}},
	{"🌈", []string{"rainbow"}},
	{"☀\uFE0F", []string{"sunny"}},
	{"🌧\uFE0F", []string{"rain_cloud"}},
	{"❄\uFE0F", []string{"snowflake"}},
	{"🌹", []string{"rose"}},
	{"🌻", []string{"sunflower"}},
	{"🐶", []string{"dog"}},
	{"🐱", []string{"cat"}},
	{"🦄", []string{"unicorn_face"}},
	{"🤖", []string{"robot_face"}},
	{"👻", []string{"ghost"}},
	{"💩", []string{"hankey", "poop", "shit"}},
	{"🙈", []string{"see_no_evil"}},
	{"🙊", []string{"speak_no_evil"}},
	{"💤", []string{"zzz"}},
	{"💬", []string{"speech_balloon"}},
	{"🆗", []string{"ok"}},
	{"🆒", []string{"cool"}},
	{"🆕", []string{"new"}},
}

// Emoji is a Unicode emoji and the names Slack gives it, the first the
// one reactions.add is given.
type Emoji struct {
	Emoji string
	Names []string
}

// EmojiTable is the table of emoji this package maps, a copy.
func EmojiTable() []Emoji { return slices.Clone(emojiNames) }

// emojiByName is the emoji of a name in emojiNames. A scan of the table
// is cheap next to the reaction it serves, and keeps no map to fill.
func emojiByName(name string) (string, bool) {
	for _, e := range emojiNames {
		if slices.Contains(e.Names, name) {
			return e.Emoji, true
		}
	}
	return "", false
}

// nameByEmoji is the name reactions.add is given for a bare emoji
// (bareEmoji) of emojiNames.
func nameByEmoji(emoji string) (string, bool) {
	for _, e := range emojiNames {
		if bareEmoji(e.Emoji) == emoji {
			return e.Names[0], true
		}
	}
	return "", false
}

// EmojiOf is the emoji a Slack reaction name stands for: the Unicode
// emoji when the table has it (a skin tone, "+1::skin-tone-3", is left
// out), else the name as Slack gave it.
func EmojiOf(name string) string {
	base, _, _ := strings.Cut(name, "::")
	if e, ok := emojiByName(base); ok {
		return e
	}
	return name
}

// ReactionName is the name reactions.add takes for emoji: a Unicode emoji
// of the table (with or without its variation selector and skin tone), or
// a Slack name as it is, with or without its colons (":thumbsup:"). ok is
// false for anything else.
func ReactionName(emoji string) (name string, ok bool) {
	emoji = strings.TrimSpace(emoji)
	if n, isName := strings.CutPrefix(emoji, ":"); isName {
		emoji = strings.TrimSuffix(n, ":")
	}
	if isEmojiName(emoji) {
		return emoji, true
	}
	return nameByEmoji(bareEmoji(emoji))
}

// bareEmoji is emoji without variation selectors and skin tones: "❤️"
// and "❤" are one heart, "👍🏽" a thumbs-up.
func bareEmoji(emoji string) string {
	return strings.Map(func(r rune) rune {
		if r == '\uFE0F' || r == '\uFE0E' || (r >= 0x1F3FB && r <= 0x1F3FF) {
			return -1
		}
		return r
	}, emoji)
}

// isEmojiName reports whether s is shaped like a Slack emoji name:
// lowercase letters, digits and _ - + ', at most 100 of them, with an
// optional skin tone ("::skin-tone-2").
func isEmojiName(s string) bool {
	base, tone, toned := strings.Cut(s, "::")
	if toned && (len(tone) != len("skin-tone-2") || !strings.HasPrefix(tone, "skin-tone-") || tone[10] < '2' || tone[10] > '6') {
		return false
	}
	if base == "" || len(base) > 100 {
		return false
	}
	return strings.IndexFunc(base, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9') && !strings.ContainsRune("_-+'", r)
	}) < 0
}
