package app

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine/outbox"
)

// teaOrCoffee is the model asking with offer_choices.
func teaOrCoffee(id string) llmtest.Response {
	return llmtest.ToolCalls(llmtest.Call(id, "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`))
}

// storedTexts are the conversation's messages as role: content.
func (b *testBundle) storedTexts(t *testing.T, u tapUser) []string {
	t.Helper()
	var out []string
	for _, m := range b.storedMessagesOn(t, u.platform(), u.thread()) {
		out = append(out, string(m.Role)+": "+m.Content)
	}
	return out
}

// Through parley run on each platform: the question is asked, the bot is
// stopped and started again on the same database and fake, and the tap
// that comes then is acknowledged, closes the question, is stored once as
// the user's message and answered by a turn that reads it. A second tap
// (from a client still showing the buttons) is told the question is
// answered.
func TestChoiceTappedAfterARestart(t *testing.T) {
	t.Parallel()
	for _, p := range tapPlatforms {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			f := p.open(t)
			u := f.user(0)
			b.model.Enqueue(teaOrCoffee("c1"), llmtest.Text("Let me ask."), llmtest.Text("Coffee it is."))
			cfg := b.writeConfig(t, f.config(""))
			r := b.start(t, cfg)
			f.ready(t, 1)
			u.say(t, "make me a drink")
			q := u.shown(t, 2)[1]
			require.Equal(t, "Tea or coffee?", q.Text)
			require.Len(t, q.Buttons, 2)
			r.stop(t)

			r = b.start(t, cfg)
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(r.stderr.String())
				}
			})
			f.ready(t, 2)
			tap(t, u, q, buttonData(t, q, "Coffee"), "")
			waitChosen(t, u, q, "Coffee")
			u.reads(t, "Let me ask.", "Tea or coffee?", "Coffee it is.")
			reqs := b.model.Requests()
			require.Len(t, reqs, 3)
			require.Equal(t, "Coffee", reqs[2].LastUserMessage(), "the model reads the choice")

			forge(t, u, q, buttonData(t, q, "Tea"), core.NoticeAlreadyAnswered)
			r.stop(t)
			require.Len(t, b.model.Requests(), 3, "the second tap asked the model nothing")
			require.Equal(t, []string{"user: make me a drink", "assistant: Let me ask.", "assistant: Tea or coffee?",
				"user: Coffee", "assistant: Coffee it is."}, b.storedTexts(t, u), "the tap stored once, the second not at all")
		})
	}
}

// Through parley run on each platform: taps whose data the bot's record
// does not back — another user's question, a choice the question has not,
// garbage, another user's reminder — are acknowledged with "This button
// no longer works." and change nothing: nothing stored, no turn, no model
// call, the other user's question still open and their reminder as it was.
func TestForgedTapsChangeNothing(t *testing.T) {
	t.Parallel()
	for _, p := range tapPlatforms {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			f := p.open(t)
			ada, eve := f.user(0), f.user(1)
			r := b.start(t, b.writeConfig(t, f.config("")))
			t.Cleanup(func() {
				if t.Failed() {
					t.Log(r.stderr.String())
				}
			})
			f.ready(t, 1)

			at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			b.model.Enqueue(llmtest.ToolCalls(
				llmtest.Call("e1", "schedule_private_message", `{"send_at":"`+at+`","message_text":"Call mum"}`),
				llmtest.Call("e2", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`)),
				llmtest.Text("Noted."))
			eve.say(t, "remind me to call mum in an hour, and ask me something")
			eveQ := eve.shown(t, 2)[1]
			require.Equal(t, "Tea or coffee?", eveQ.Text)
			result, ok := b.model.Requests()[1].ToolMessage("e1")
			require.True(t, ok)
			var job struct {
				TaskID int64 `json:"task_id"`
			}
			require.NoError(t, json.Unmarshal([]byte(result.Content), &job))
			require.Positive(t, job.TaskID)

			b.model.Enqueue(teaOrCoffee("a1"), llmtest.Text("Let me ask."))
			ada.say(t, "make me a drink")
			q := ada.shown(t, 2)[1]
			asked := len(b.model.Requests())
			before := b.storedTexts(t, ada)
			question, _, err := core.ParseChoiceData(buttonData(t, q, "Tea"))
			require.NoError(t, err)

			for what, data := range map[string]string{
				"another user's question":       buttonData(t, eveQ, "Tea"),
				"a choice the question has not": core.ChoiceData(question, 2),
				"garbage":                       "garbage",
				"a malformed choice":            "q" + buttonData(t, q, "Tea"),
				"another user's reminder":       outbox.ReminderChoices(job.TaskID)[0].Data,
				"another user's reminder done":  outbox.ReminderChoices(job.TaskID)[2].Data,
			} {
				t.Log(what)
				forge(t, ada, q, data, core.NoticeStaleButton)
			}

			require.Len(t, b.model.Requests(), asked, "no model call")
			require.Equal(t, before, b.storedTexts(t, ada), "nothing stored")
			require.Empty(t, ada.chosen(q), "Ada's question still open")
			st := b.openStoreFile(t)
			var snoozed int64
			require.NoError(t, st.DB().Raw(`SELECT COUNT(*) FROM jobs WHERE origin = ?`, outbox.OriginSnooze).Row().Scan(&snoozed))
			require.Zero(t, snoozed, "Eve's reminder neither snoozed nor done")
			j, err := st.Job(t.Context(), job.TaskID)
			require.NoError(t, err)
			require.Equal(t, core.JobPending, j.Status)

			b.model.Enqueue(llmtest.Text("Tea for Eve."))
			tap(t, eve, eveQ, buttonData(t, eveQ, "Tea"), "")
			eve.reads(t, "Noted.", "Tea or coffee?", "Tea for Eve.") // Eve's question was still open
		})
	}
}

// Through parley run on Telegram: a tap made while the bot is down waits
// in Telegram's queue of updates; the bot started again takes it in time
// (Telegram takes an answer up to 15 s after the tap), once, and answers
// it with a turn.
func TestTelegramTapWhileTheBotIsDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(teaOrCoffee("c1"), llmtest.Text("Let me ask."), llmtest.Text("Tea it is."))
	cfg := b.writeConfig(t, telegramConfig(fake, ""))
	r := b.start(t, cfg)
	fake.SendPrivate(ada, "make me a drink")
	q := fake.WaitSent(t, ada.ID, 2, waitFor)[1]
	require.Equal(t, "Tea or coffee?", q.Plain)
	r.stop(t)

	_, err := fake.Tap(ada, q.MessageID, q.Buttons[0][0].Data)
	require.NoError(t, err)
	require.Positive(t, fake.Pending(), "queued while the bot is down")
	require.Zero(t, fake.Dropped(), "callback_query is among the allowed updates")
	b.start(t, cfg)
	answers := fake.WaitCallbackAnswers(t, 1, waitFor)
	require.Empty(t, answers[0].Text)
	require.Equal(t, "Tea it is.", fake.WaitSent(t, ada.ID, 3, waitFor)[2].Plain)
	require.Eventually(t, func() bool {
		return reflect.DeepEqual([][]telegramtest.Button{{{Text: "✓ Tea", Data: q.Buttons[0][0].Data}}}, fake.Buttons(ada.ID, q.MessageID))
	}, waitFor, 5*time.Millisecond, "the choice marked")
	require.Len(t, b.model.Requests(), 3)
	require.Empty(t, fake.Unanswered())
	require.Equal(t, []string{"user: make me a drink", "assistant: Let me ask.", "assistant: Tea or coffee?",
		"user: Tea", "assistant: Tea it is."}, b.storedTexts(t, &telegramUser{fake: fake, u: ada}), "each update taken once")
}
