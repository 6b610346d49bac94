// Package buttons shapes the Telegram side of a question's choices
// (core/choices.go): the inline keyboard that shows them and the taps
// (callback queries) that answer them. The telegram adapter sends,
// receives and acknowledges; this package holds no state and calls
// nothing.
//
// A question's buttons sit one a row, or two a row when every label is
// short, each button's callback_data the choice's Data. A choice made
// replaces the keyboard with one button "✓ <label>" that keeps the tapped
// data (Chosen): the user sees what they chose where they chose it, and a
// tap on it reaches the core again, which answers "Already answered.".
// Removing the keyboard would lose the mark; appending it to the text
// would need the text rendered again.
package buttons

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// Keyboard is reply_markup's InlineKeyboardMarkup with callback buttons
// alone. models.InlineKeyboardButton is not used: it always encodes an
// empty copy_text (a struct, not a pointer), reported refused by Telegram
// beside callback_data (400 BUTTON_COPY_TEXT_INVALID).
type Keyboard struct {
	InlineKeyboard [][]Button `json:"inline_keyboard"`
}

// Button is a callback button.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// shortLabel is the longest label (in characters) that still sits two a
// row: two buttons share a phone's width, and longer labels get cut off.
const shortLabel = 14

// Layout lays choices out as a keyboard; nil for none.
func Layout(choices []core.Choice) *Keyboard {
	if len(choices) == 0 {
		return nil
	}
	perRow := 2
	for _, c := range choices {
		if utf8.RuneCountInString(c.Label) > shortLabel {
			perRow = 1
			break
		}
	}
	kb := &Keyboard{}
	for i := 0; i < len(choices); i += perRow {
		var row []Button
		for _, c := range choices[i:min(i+perRow, len(choices))] {
			row = append(row, Button{Text: c.Label, CallbackData: c.Data})
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, row)
	}
	return kb
}

// Chosen is the keyboard of an answered question: one button marking the
// choice label, with the tapped data.
func Chosen(label, data string) *Keyboard {
	return &Keyboard{InlineKeyboard: [][]Button{{{Text: "✓ " + label, CallbackData: data}}}}
}

// Markup is kb as a reply_markup parameter: nil (the parameter left out)
// for no keyboard, never a typed nil that would encode as null.
func Markup(kb *Keyboard) models.ReplyMarkup {
	if kb == nil {
		return nil
	}
	return kb
}

// Tap reads q, a callback query the bot botID got at now, as a tap for
// the core: an InboundMessage of platform with Tap set (DisplayName left
// to the caller). For a tap the core must not hear (outside a private
// chat, by a bot, without data) it returns why instead.
func Tap(q *models.CallbackQuery, platform core.Platform, botID int64, now time.Time) (core.InboundMessage, string) {
	chat, msgID := Chat(q)
	switch {
	case q.InlineMessageID != "" || chat.ID == 0 || msgID == 0:
		return core.InboundMessage{}, "a tap on a message outside a chat (inline mode)"
	case chat.Type != models.ChatTypePrivate:
		return core.InboundMessage{}, "a tap outside a private chat"
	case q.From.ID == 0 || q.From.IsBot || q.From.ID == botID:
		return core.InboundMessage{}, "a tap by no user or by a bot"
	case q.Data == "":
		return core.InboundMessage{}, "a tap without data"
	}
	return core.InboundMessage{
		Platform:        platform,
		ChannelThreadID: strconv.FormatInt(chat.ID, 10),
		ChannelUserID:   strconv.FormatInt(q.From.ID, 10),
		// A callback query carries no date: it is taken as it comes.
		SentAt: now.UTC(),
		Direct: true,
		Tap:    &core.Tap{Data: q.Data, MessageID: strconv.Itoa(msgID), ID: q.ID},
	}, ""
}

// Chat is the chat and id of the message whose button q tapped; zero for
// a message sent in inline mode. A message too old for Telegram to show
// comes as an inaccessible message, with its chat and id still.
func Chat(q *models.CallbackQuery) (models.Chat, int) {
	switch {
	case q.Message.Message != nil:
		return q.Message.Message.Chat, q.Message.Message.ID
	case q.Message.InaccessibleMessage != nil:
		return q.Message.InaccessibleMessage.Chat, q.Message.InaccessibleMessage.MessageID
	}
	return models.Chat{}, 0
}
