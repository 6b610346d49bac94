package telegram

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// A question's choices (core.OutboundMessage.Choices) go as an inline
// keyboard on the last message of the reply: one button a row, or two a
// row when every label is short, each button's callback_data the choice's
// Data. When a tap makes the choice (core.TapAnswer.Chosen), the keyboard
// is replaced by one button "✓ <label>" that keeps the tapped data: the
// user sees what they chose where they chose it, and a tap on it reaches
// the core again, which answers "Already answered." (removing the keyboard
// would lose the mark; appending it to the text would need the text).

// inlineKeyboard is reply_markup's InlineKeyboardMarkup with callback
// buttons alone. models.InlineKeyboardButton is not used: it always
// encodes copy_text (a struct, not a pointer), which Telegram refuses
// beside callback_data (400 BUTTON_COPY_TEXT_INVALID).
type inlineKeyboard struct {
	InlineKeyboard [][]inlineButton `json:"inline_keyboard"`
}

type inlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// shortLabel is the longest label (in characters) that still sits two a
// row: two buttons share a phone's width, so longer labels get cut off
// with an ellipsis.
const shortLabel = 14

// keyboard lays choices out as an inline keyboard; nil for none.
func keyboard(choices []core.Choice) *inlineKeyboard {
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
	kb := &inlineKeyboard{}
	for i := 0; i < len(choices); i += perRow {
		var row []inlineButton
		for _, c := range choices[i:min(i+perRow, len(choices))] {
			row = append(row, inlineButton{Text: c.Label, CallbackData: c.Data})
		}
		kb.InlineKeyboard = append(kb.InlineKeyboard, row)
	}
	return kb
}

// chosenKeyboard is the keyboard of an answered question: one button
// marking the choice, with the tapped data.
func chosenKeyboard(label, data string) *inlineKeyboard {
	return &inlineKeyboard{InlineKeyboard: [][]inlineButton{{{Text: "✓ " + label, CallbackData: data}}}}
}

// markupOf is kb as a reply_markup parameter: nil (the parameter left
// out) for no keyboard, never a typed nil that would encode as null.
func markupOf(kb *inlineKeyboard) models.ReplyMarkup {
	if kb == nil {
		return nil
	}
	return kb
}

// setKeyboard replaces the keyboard of message id (editMessageReplyMarkup)
// at the send_rate pace and with Send's retries. A keyboard already
// showing ("message is not modified") is no error.
func (s *sender) setKeyboard(ctx context.Context, b *bot.Bot, chatID int64, id int, kb *inlineKeyboard) error {
	const what = "editing a telegram message's buttons"
	_, err := s.deliver(ctx, what, chatID, func(ctx context.Context) (*models.Message, error) {
		m, err := b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: chatID, MessageID: id, ReplyMarkup: markupOf(kb)})
		if notModified(err) {
			return &models.Message{ID: id}, nil
		}
		return m, err
	})
	return err
}

// answerQuery acknowledges a callback query with text ("" for none). It
// is tried once: Telegram takes an answer only within about 15 seconds of
// the tap, and the spinner it stops is cosmetic.
func (st *state) answerQuery(ctx context.Context, b *bot.Bot, queryID, text string) error {
	_, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: queryID, Text: text})
	if err != nil {
		return st.sendError("answering a telegram callback query", err)
	}
	return nil
}

// queryExpired reports whether err is Telegram refusing an answer that
// came too late (or twice).
func queryExpired(err error) bool {
	return err != nil && strings.Contains(err.Error(), "query is too old")
}
