package telegramtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"
)

// A forged tap carries data the message does not show, on a message the
// bot did send; its query is answered like any other.
func TestForgeTap(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.StartedBy(tb.alice)
	status, r := tb.ask(t, yesNo)
	require.Equal(t, http.StatusOK, status)
	var sent models.Message
	require.NoError(t, json.Unmarshal(r.Result, &sent))

	_, err := tb.srv.ForgeTap(tb.alice, sent.ID+1, "q1.0")
	require.Error(t, err, "no such message")
	upd, err := tb.srv.ForgeTap(tb.alice, sent.ID, "q9.9")
	require.NoError(t, err)
	require.Equal(t, "q9.9", upd.CallbackQuery.Data)
	require.Equal(t, "q1.0", upd.CallbackQuery.Message.Message.ReplyMarkup.InlineKeyboard[0][0].CallbackData,
		"the message as it shows")

	b, _ := tb.newBot(t)
	_, err = b.AnswerCallbackQuery(context.Background(), &bot.AnswerCallbackQueryParams{CallbackQueryID: upd.CallbackQuery.ID, Text: "No."})
	require.NoError(t, err)
	answers := tb.srv.WaitCallbackAnswers(t, 1, wait)
	require.Equal(t, "q9.9", answers[0].Data)
	require.Equal(t, "No.", answers[0].Text)
}
