package app

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// A question of offer_choices goes to Telegram as an inline keyboard; a
// tap is the user's answer, acknowledged, marked, and answered by a turn.
func TestTelegramChoicesEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`)),
		llmtest.Text("Let me ask."),
		llmtest.Text("Coffee it is."),
	)
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	fake.SendPrivate(ada, "what should I drink?")
	sent := fake.WaitSent(t, ada.ID, 2, waitFor)
	q := sent[len(sent)-1]
	require.Equal(t, "Tea or coffee?", q.Plain)
	require.Len(t, q.Buttons, 1)
	require.Len(t, q.Buttons[0], 2)
	require.Equal(t, "Coffee", q.Buttons[0][1].Text)
	data := q.Buttons[0][1].Data

	_, err := fake.Tap(ada, q.MessageID, data)
	require.NoError(t, err)
	answers := fake.WaitCallbackAnswers(t, 1, waitFor)
	require.Empty(t, answers[0].Text)
	sent = fake.WaitSent(t, ada.ID, 3, waitFor)
	require.Equal(t, "Coffee it is.", sent[2].Plain)
	reqs := b.model.Requests()
	require.Equal(t, "Coffee", reqs[len(reqs)-1].LastUserMessage(), "the tap is the user's message")
	want := [][]telegramtest.Button{{{Text: "✓ Coffee", Data: data}}}
	require.Eventually(t, func() bool { return reflect.DeepEqual(want, fake.Buttons(ada.ID, q.MessageID)) }, waitFor, 5*time.Millisecond)

	_, err = fake.Tap(ada, q.MessageID, data)
	require.NoError(t, err)
	answers = fake.WaitCallbackAnswers(t, 2, waitFor)
	require.Equal(t, core.NoticeAlreadyAnswered, answers[1].Text)
}
