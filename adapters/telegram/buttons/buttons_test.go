package buttons_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/buttons"
	"github.com/parleybot/parley/core"
)

func TestLayoutAndMarkup(t *testing.T) {
	t.Parallel()
	require.Nil(t, buttons.Layout(nil))
	require.Nil(t, buttons.Markup(nil), "no keyboard: the parameter is left out")
	kb := buttons.Layout([]core.Choice{{Label: "Yes", Data: "q1.0"}, {Label: "No", Data: "q1.1"}, {Label: "Maybe", Data: "q1.2"}})
	raw, err := json.Marshal(buttons.Markup(kb))
	require.NoError(t, err)
	require.JSONEq(t, `{"inline_keyboard":[[{"text":"Yes","callback_data":"q1.0"},{"text":"No","callback_data":"q1.1"}],
		[{"text":"Maybe","callback_data":"q1.2"}]]}`, string(raw), "no copy_text, short labels two a row")
	kb = buttons.Layout([]core.Choice{{Label: "A label far too long", Data: "q1.0"}, {Label: "B", Data: "q1.1"}})
	require.Len(t, kb.InlineKeyboard, 2)
	require.Equal(t, [][]buttons.Button{{{Text: "✓ B", CallbackData: "q1.1"}}}, buttons.Chosen("B", "q1.1").InlineKeyboard)
}

func TestTap(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.FixedZone("x", 3600))
	decode := func(raw string) *models.CallbackQuery {
		var q models.CallbackQuery
		require.NoError(t, json.Unmarshal([]byte(raw), &q))
		return &q
	}
	q := decode(`{"id":"77","from":{"id":5,"first_name":"Ada"},"chat_instance":"1","data":"q1.0",
		"message":{"message_id":9,"date":1700000000,"chat":{"id":5,"type":"private"},"text":"Shall we?"}}`)
	msg, why := buttons.Tap(q, "telegram", 999, now)
	require.Empty(t, why)
	require.Equal(t, core.InboundMessage{Platform: "telegram", ChannelThreadID: "5", ChannelUserID: "5", SentAt: now.UTC(),
		Direct: true, Tap: &core.Tap{Data: "q1.0", MessageID: "9", ID: "77"}}, msg)

	// A message too old to show still names its chat.
	q = decode(`{"id":"78","from":{"id":5,"first_name":"Ada"},"data":"q1.0","message":{"message_id":9,"date":0,"chat":{"id":5,"type":"private"}}}`)
	msg, why = buttons.Tap(q, "telegram", 999, now)
	require.Empty(t, why)
	require.Equal(t, "9", msg.Tap.MessageID)

	for name, raw := range map[string]string{
		"group":  `{"id":"1","from":{"id":5},"data":"q1.0","message":{"message_id":9,"date":1,"chat":{"id":-100,"type":"group"}}}`,
		"inline": `{"id":"1","from":{"id":5},"data":"q1.0","inline_message_id":"abc"}`,
		"bot":    `{"id":"1","from":{"id":6,"is_bot":true},"data":"q1.0","message":{"message_id":9,"date":1,"chat":{"id":6,"type":"private"}}}`,
		"itself": `{"id":"1","from":{"id":999},"data":"q1.0","message":{"message_id":9,"date":1,"chat":{"id":999,"type":"private"}}}`,
		"nodata": `{"id":"1","from":{"id":5},"message":{"message_id":9,"date":1,"chat":{"id":5,"type":"private"}}}`,
	} {
		_, why := buttons.Tap(decode(raw), "telegram", 999, now)
		require.NotEmpty(t, why, name)
	}
}
