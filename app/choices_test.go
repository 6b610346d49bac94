package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// tapAnswer is POST /web/taps' answer.
type tapAnswer struct {
	Chosen, Notice string
}

func postTap(t testing.TB, addr, client, messageID, data string) tapAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"client_id": client, "name": "Ada", "message_id": messageID, "data": data})
	resp, err := http.Post("http://"+addr+"/web/taps", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var a tapAnswer
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
	return a
}

// Through parley run on the web chat: the model asks with offer_choices;
// the question comes after the reply with a button per choice; a tap is
// the user's next message (the model reads the choice), a second tap is
// told the question is answered, and a tap on another user's question
// changes nothing.
func TestWebChoiceTappedOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`)))
	b.model.Enqueue(llmtest.Text("Let me ask you something."))
	b.model.Enqueue(llmtest.Text("Coffee it is."))

	const client, other = "client-choice-1", "client-choice-2"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "make me a drink")
	require.Equal(t, "Let me ask you something.", events.nextMessage(t))
	q := events.nextWireMessage(t)
	require.Equal(t, "Tea or coffee?", q.Text)
	require.Len(t, q.Choices, 2)
	require.Equal(t, "Tea", q.Choices[0].Label)
	require.Equal(t, "Coffee", q.Choices[1].Label)

	require.Equal(t, tapAnswer{Notice: "This button no longer works."}, postTap(t, r.addr, other, q.ID, q.Choices[0].Data),
		"another user's question")
	require.Equal(t, tapAnswer{Chosen: "Coffee"}, postTap(t, r.addr, client, q.ID, q.Choices[1].Data))
	require.Equal(t, "Coffee it is.", events.nextMessage(t))
	require.Equal(t, tapAnswer{Notice: "Already answered."}, postTap(t, r.addr, client, q.ID, q.Choices[0].Data))
	require.Equal(t, tapAnswer{Notice: "This button no longer works."}, postTap(t, r.addr, client, q.ID, "q999999.0"), "forged data")

	reqs := b.model.Requests()
	require.Len(t, reqs, 3, "the taps that changed nothing asked the model nothing")
	require.Equal(t, "Coffee", reqs[2].LastUserMessage(), "the model reads the choice")
	stored := b.storedMessages(t, client)
	var texts []string
	for _, m := range stored {
		texts = append(texts, string(m.Role)+": "+m.Content)
	}
	require.Equal(t, []string{"user: make me a drink", "assistant: Let me ask you something.", "assistant: Tea or coffee?",
		"user: Coffee", "assistant: Coffee it is."}, texts)
	_, err := b.openStoreFile(t).ConversationByThread(context.Background(), web.Platform, other)
	require.ErrorIs(t, err, core.ErrNotFound, "the forged tap stored nothing, not even a conversation")
}

// Through parley run on the web chat: a reminder the model set arrives
// with Snooze and Done buttons; with the model down, Snooze schedules the
// same text again 10 minutes on and says when; a second tap is told the
// reminder was answered. The model is asked nothing.
func TestWebReminderSnoozedWithTheModelDown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(r.stderr.String())
		}
	})
	// Far enough ahead for the turn that schedules it to end first, on a
	// loaded machine (send_at has whole seconds).
	at := time.Now().Add(6 * time.Second).UTC().Format(time.RFC3339)
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "schedule_private_message",
		`{"send_at":"`+at+`","message_text":"Stretch your legs!"}`)))
	b.model.Enqueue(llmtest.Text("I will remind you."))

	const client = "client-remind-1"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "remind me to stretch in a moment")
	require.Equal(t, "I will remind you.", events.nextMessage(t))
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(http.StatusServiceUnavailable) })
	asked := len(b.model.Requests())

	rem := events.nextWireMessage(t)
	require.Equal(t, "Stretch your legs!", rem.Text)
	var labels []string
	for _, c := range rem.Choices {
		labels = append(labels, c.Label)
	}
	require.Equal(t, []string{"Snooze 10 min", "Snooze 1 h", "Done"}, labels)

	tapped := time.Now()
	got := postTap(t, r.addr, client, rem.ID, rem.Choices[0].Data)
	require.Equal(t, "Snooze 10 min", got.Chosen)
	require.Regexp(t, `^Snoozed until \d\d:\d\d\.$`, got.Notice)
	require.Equal(t, tapAnswer{Notice: "Already answered."}, postTap(t, r.addr, client, rem.ID, rem.Choices[2].Data))
	require.Len(t, b.model.Requests(), asked, "no model call")

	st := b.openStoreFile(t)
	conv, err := st.ConversationByThread(context.Background(), web.Platform, client)
	require.NoError(t, err)
	var snoozed []core.Job
	require.NoError(t, st.DB().Raw(`SELECT id FROM jobs WHERE conversation_id = ? AND origin = 'snooze'`, conv.ID).Scan(&snoozed).Error)
	require.Len(t, snoozed, 1, "snoozed once")
	j, err := st.Job(context.Background(), snoozed[0].ID)
	require.NoError(t, err)
	require.Equal(t, "Stretch your legs!", j.Text)
	require.Equal(t, core.JobPending, j.Status)
	require.WithinDuration(t, tapped.Add(10*time.Minute), j.DueAt, 5*time.Second)
}

// Through parley run on Discord: the question comes with a button per
// choice; a tap is acknowledged by closing the question (the buttons
// disabled, the choice marked) and is the user's next message; a second
// tap on the now disabled buttons is refused by Discord itself, and a
// tap on another user's question is acknowledged with the notice only.
func TestDiscordChoiceTapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	var asked atomic.Int32
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		switch r.LastUserMessage() {
		case "make me a drink":
			if asked.Add(1) == 1 {
				return llmtest.ToolCalls(llmtest.Call("c1", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`))
			}
			return llmtest.Text("")
		case "Tea":
			return llmtest.Text("Tea it is.")
		}
		return llmtest.Text("Hello.")
	})
	r := b.start(t, b.writeConfig(t, discordConfig(fake)))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(r.stderr.String())
		}
	})
	fake.WaitReady(t, waitFor)
	channel, _ := fake.SendDM(lin, "make me a drink")
	sent := fake.WaitSent(t, channel, 1, waitFor)
	require.Equal(t, "Tea or coffee?", sent[0].Content, "the model said nothing more: the question is the reply")
	buttons := sent[0].Buttons()
	require.Len(t, buttons, 2)
	require.Equal(t, "Tea", buttons[0].Label)

	other := discordtest.User{ID: "300000000000000777", Username: "eve"}
	fake.SendDM(other, "hello") // Eve has a DM of her own
	_, err := fake.Tap(other, sent[0].MessageID, buttons[0].CustomID)
	require.Error(t, err, "Discord shows a message's buttons only in its own DM")

	id, err := fake.Tap(lin, sent[0].MessageID, buttons[0].CustomID)
	require.NoError(t, err)
	cb := fake.WaitCallback(t, id, waitFor)
	require.Equal(t, 7, cb.Type, "acknowledged by closing the question")
	fake.WaitShows(t, channel, waitFor, "Tea or coffee?", "Tea it is.")
	msg, ok := fake.Message(sent[0].MessageID)
	require.True(t, ok)
	for _, bt := range msg.Buttons() {
		require.True(t, bt.Disabled, "closed: %+v", bt)
	}
	_, err = fake.Tap(lin, sent[0].MessageID, buttons[1].CustomID)
	require.Error(t, err, "a disabled button cannot be tapped")
	var read []string
	for _, q := range b.model.Requests() {
		read = append(read, q.LastUserMessage())
	}
	require.Contains(t, read, "Tea", "the model reads the choice")
}

// Through parley run on Slack (Socket Mode): the question comes as Block
// Kit buttons; a tap is acknowledged in time, closes the question (the
// buttons replaced by the choice) and is the user's next message; a
// second tap on the closed question finds no button.
func TestSlackChoiceTapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var asked atomic.Int32
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		switch r.LastUserMessage() {
		case "make me a drink":
			if asked.Add(1) == 1 {
				return llmtest.ToolCalls(llmtest.Call("c1", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`))
			}
			return llmtest.Text("")
		case "Coffee":
			return llmtest.Text("Coffee it is.")
		}
		return llmtest.Text("Hello.")
	})
	fake, _ := startSlack(t, b, "socket")
	channel, _ := fake.SendDM(mei, "make me a drink")
	q := fake.WaitSent(t, channel, 1, waitFor)[0]
	buttons := q.Buttons()
	require.Len(t, buttons, 2)
	require.Equal(t, "Coffee", buttons[1].Label)

	trigger, err := fake.Tap(mei, channel, q.TS, buttons[1].Value)
	require.NoError(t, err)
	ack := fake.WaitTapAck(t, trigger, waitFor)
	require.False(t, ack.Late, "acknowledged within Slack's 3 s")
	fake.WaitShows(t, channel, waitFor, "Tea or coffee?", "Coffee it is.")
	closed := fake.WaitBotMessages(t, channel, waitFor, func(ms []slacktest.BotMessage) bool {
		return len(ms) >= 1 && len(ms[0].Buttons()) == 0
	})
	require.Contains(t, strings.Join(closed[0].Context(), " "), "Coffee", "the choice is shown where the buttons were")
	_, err = fake.Tap(mei, channel, q.TS, buttons[0].Value)
	require.Error(t, err, "the closed question has no buttons left")
}
