package telegramtest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
)

// Button is one inline keyboard button as the user sees it: its label,
// and the callback_data a tap sends back ("" for a URL button).
type Button struct {
	Text string
	Data string
	// URL is a URL button's link, "" for a callback button.
	URL string
}

// maxCallbackData is Telegram's limit on callback_data, in bytes.
const maxCallbackData = 64

// Telegram's answers to keyboards it refuses.
const (
	badMarkupJSON  = "can't parse reply keyboard markup JSON object"
	buttonNoAction = "can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
	buttonData     = "BUTTON_DATA_INVALID"
	buttonCopyText = "BUTTON_COPY_TEXT_INVALID"
)

// wireButton is an inline keyboard button as it travels.
type wireButton struct {
	Text         string           `json:"text"`
	CallbackData *string          `json:"callback_data,omitempty"`
	URL          string           `json:"url,omitempty"`
	CopyText     *json.RawMessage `json:"copy_text,omitempty"`
}

// replyMarkup reads a reply_markup parameter as Telegram does: an inline
// keyboard is checked and returned as the user sees it; nil for none (a
// reply keyboard, which the fake does not show, is nil too). Each button
// must do one thing (callback_data of 1-64 bytes, or a URL); a copy_text
// without text is refused, as Telegram refuses the one go-telegram/bot's
// models.InlineKeyboardButton always encodes.
func replyMarkup(p params) ([][]Button, *Fault) {
	raw := strings.TrimSpace(p["reply_markup"])
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var m struct {
		InlineKeyboard *[][]wireButton `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		f := badRequest(badMarkupJSON)
		return nil, &f
	}
	if m.InlineKeyboard == nil {
		return nil, nil
	}
	var rows [][]Button
	for _, wr := range *m.InlineKeyboard {
		var row []Button
		for _, wb := range wr {
			if wb.CopyText != nil {
				var ct struct {
					Text string `json:"text"`
				}
				if json.Unmarshal(*wb.CopyText, &ct) != nil || ct.Text == "" {
					f := badRequest(buttonCopyText)
					return nil, &f
				}
			}
			data := ""
			if wb.CallbackData != nil {
				data = *wb.CallbackData
			}
			switch {
			case len(data) > maxCallbackData:
				f := badRequest(buttonData)
				return nil, &f
			case data == "" && wb.URL == "" && wb.CopyText == nil:
				f := badRequest(buttonNoAction)
				return nil, &f
			}
			row = append(row, Button{Text: wb.Text, Data: data, URL: wb.URL})
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// sameButtons reports whether two keyboards look and act alike.
func sameButtons(a, b [][]Button) bool {
	return slices.EqualFunc(a, b, func(x, y []Button) bool { return slices.Equal(x, y) })
}

// editMessageReplyMarkup replaces a message's inline keyboard, or removes
// it when reply_markup is left out; the same keyboard again is Telegram's
// 400 "message is not modified".
func (s *editAPI) editMessageReplyMarkup(_ context.Context, p params) (any, *Fault) {
	if p["inline_message_id"] != "" {
		f := badRequest("the fake only edits messages by chat_id and message_id")
		return nil, &f
	}
	buttons, f := replyMarkup(p)
	if f != nil {
		return nil, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k, m, f := s.message(p, editMissing)
	switch {
	case f != nil:
		return nil, f
	case sameButtons(m.Buttons, buttons):
		bad := badRequest(notModified)
		return nil, &bad
	}
	m.Buttons = buttons
	s.msgs.current[k] = m
	s.notify()
	return s.messageModel(k, m), nil
}

// Buttons returns the inline keyboard message messageID of chatID shows
// now, row by row; nil for none (or no such message).
func (s *editAPI) Buttons(chatID int64, messageID int) [][]Button {
	m, ok := s.Message(chatID, messageID)
	if !ok {
		return nil
	}
	return m.Buttons
}
