package telegramtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// yesNo is an inline keyboard as reply_markup JSON.
const yesNo = `{"inline_keyboard":[[{"text":"Yes","callback_data":"q1.0"},{"text":"No","callback_data":"q1.1"}]]}`

// ask sends a question with keyboard markup by a raw call; it returns
// the status and the envelope.
func (tb *testBundle) ask(t *testing.T, markup string) (int, apiResponse) {
	t.Helper()
	status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "sendMessage",
		url.Values{"chat_id": {"1001"}, "text": {"Shall we?"}, "reply_markup": {markup}})
	var r apiResponse
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return status, r
}

func TestKeyboardIsRecordedAndTapped(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := &fakeNow{t: now}
	tb := setup(t, telegramtest.WithNow(clock.Now))
	tb.srv.StartedBy(tb.alice)
	status, r := tb.ask(t, yesNo)
	require.Equal(t, http.StatusOK, status)
	var sent models.Message
	require.NoError(t, json.Unmarshal(r.Result, &sent))
	require.NotNil(t, sent.ReplyMarkup, "the answer shows the keyboard")
	require.Equal(t, "q1.1", sent.ReplyMarkup.InlineKeyboard[0][1].CallbackData)
	want := [][]telegramtest.Button{{{Text: "Yes", Data: "q1.0"}, {Text: "No", Data: "q1.1"}}}
	require.Equal(t, want, tb.srv.Sent(tb.alice.ID)[0].Buttons)

	_, err := tb.srv.Tap(tb.alice, sent.ID, "q9.9")
	require.Error(t, err, "no such button")
	_, err = tb.srv.Tap(tb.alice, sent.ID+1, "q1.0")
	require.Error(t, err, "no such message")

	upd, err := tb.srv.Tap(tb.alice, sent.ID, "q1.0")
	require.NoError(t, err)
	got := tb.getUpdates(t, url.Values{"allowed_updates": {`["message","callback_query"]`}})
	require.True(t, got.OK)
	var ups []models.Update
	require.NoError(t, json.Unmarshal(got.Result, &ups))
	require.Len(t, ups, 1)
	cq := ups[0].CallbackQuery
	require.NotNil(t, cq)
	require.Equal(t, upd.CallbackQuery.ID, cq.ID)
	require.Equal(t, "q1.0", cq.Data)
	require.Equal(t, tb.alice.ID, cq.From.ID)
	require.NotEmpty(t, cq.ChatInstance)
	require.NotNil(t, cq.Message.Message)
	require.Equal(t, sent.ID, cq.Message.Message.ID)
	require.Equal(t, models.ChatTypePrivate, cq.Message.Message.Chat.Type)
	require.Equal(t, "q1.0", cq.Message.Message.ReplyMarkup.InlineKeyboard[0][0].CallbackData)
	require.Equal(t, []string{cq.ID}, tb.srv.Unanswered())

	b, _ := tb.newBot(t)
	ctx := context.Background()
	ok, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: cq.ID, Text: "Noted."})
	require.NoError(t, err)
	require.True(t, ok)
	answers := tb.srv.WaitCallbackAnswers(t, 1, wait)
	require.Equal(t, telegramtest.CallbackAnswer{QueryID: cq.ID, ChatID: tb.alice.ID, UserID: tb.alice.ID,
		MessageID: sent.ID, Data: "q1.0", Text: "Noted.", At: now}, answers[0])
	require.Empty(t, tb.srv.Unanswered())

	_, err = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: cq.ID})
	require.ErrorContains(t, err, "query is too old", "a query is answered once")

	// An answer after Telegram's 15 s is refused.
	upd, err = tb.srv.Tap(tb.alice, sent.ID, "q1.1")
	require.NoError(t, err)
	clock.Add(telegramtest.CallbackExpiry + time.Second)
	_, err = b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: upd.CallbackQuery.ID})
	require.ErrorContains(t, err, "query is too old and response timeout expired or query ID is invalid")
	require.Len(t, tb.srv.CallbackAnswers(), 1)
}

func TestEditMessageReplyMarkup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.StartedBy(tb.alice)
	_, r := tb.ask(t, yesNo)
	var sent models.Message
	require.NoError(t, json.Unmarshal(r.Result, &sent))
	b, _ := tb.newBot(t)
	ctx := context.Background()

	mark := [][]models.InlineKeyboardButton{{{Text: "✓ Yes", CallbackData: "q1.0", CopyText: models.CopyTextButton{Text: "x"}}}}
	_, err := b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: tb.alice.ID, MessageID: sent.ID,
		ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "✓ Yes", CallbackData: "q1.0"}}}}})
	require.ErrorContains(t, err, "BUTTON_COPY_TEXT_INVALID", "go-telegram/bot's button always carries copy_text")
	_, err = b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: tb.alice.ID, MessageID: sent.ID,
		ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: mark}})
	require.NoError(t, err)
	want := [][]telegramtest.Button{{{Text: "✓ Yes", Data: "q1.0"}}}
	require.Equal(t, want, tb.srv.Buttons(tb.alice.ID, sent.ID))
	require.Nil(t, tb.srv.Edits(tb.alice.ID, sent.ID), "the text was not edited")

	_, err = b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: tb.alice.ID, MessageID: sent.ID,
		ReplyMarkup: &models.InlineKeyboardMarkup{InlineKeyboard: mark}})
	require.ErrorContains(t, err, "message is not modified")

	// An edit of the text that names no keyboard removes it.
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: tb.alice.ID, MessageID: sent.ID, Text: "Shall we? Yes."})
	require.NoError(t, err)
	require.Nil(t, tb.srv.Buttons(tb.alice.ID, sent.ID))
	_, err = b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: tb.alice.ID, MessageID: sent.ID})
	require.ErrorContains(t, err, "message is not modified", "no keyboard to remove")
}

func TestKeyboardsTelegramRefuses(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.StartedBy(tb.alice)
	long := `{"inline_keyboard":[[{"text":"A","callback_data":"` + strings.Repeat("x", 65) + `"}]]}`
	for markup, want := range map[string]string{
		`{"inline_keyboard":[[{"text":"A"}]]}`:                    "Text buttons are unallowed in the inline keyboard",
		`{"inline_keyboard":[[{"text":"A","callback_data":""}]]}`: "Text buttons are unallowed in the inline keyboard",
		long: "BUTTON_DATA_INVALID",
		`{"inline_keyboard":[[{"text":"A","callback_data":"a","copy_text":{"text":""}}]]}`: "BUTTON_COPY_TEXT_INVALID",
		`{"inline_keyboard":`: "can't parse reply keyboard markup JSON object",
	} {
		status, r := tb.ask(t, markup)
		require.Equal(t, http.StatusBadRequest, status, markup)
		require.Contains(t, r.Description, want, markup)
	}
	require.Empty(t, tb.srv.Sent(tb.alice.ID))
}

func TestAllowedUpdatesDropKindsLeftOut(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.StartedBy(tb.alice)
	_, r := tb.ask(t, yesNo)
	var sent models.Message
	require.NoError(t, json.Unmarshal(r.Result, &sent))
	got := tb.getUpdates(t, url.Values{"allowed_updates": {`["message"]`}})
	require.True(t, got.OK)

	_, err := tb.srv.Tap(tb.alice, sent.ID, "q1.0")
	require.NoError(t, err)
	tb.srv.SendPrivate(tb.alice, "hi")
	require.Equal(t, 1, tb.srv.Dropped(), "a bot that asks for messages alone gets no taps")
	require.Equal(t, 1, tb.srv.Pending())

	// Left out, the last list holds; an empty one is Telegram's default.
	tb.getUpdates(t, url.Values{"allowed_updates": {`[]`}, "offset": {"-1"}})
	_, err = tb.srv.Tap(tb.alice, sent.ID, "q1.0")
	require.NoError(t, err)
	require.Equal(t, 1, tb.srv.Dropped())
}
