package app

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/plugins/memory"
)

// /reminders shows a cancel button per reminder and /forget all a
// confirmation, on Telegram; each tap is answered without the model and
// stored once; a confirmation takes one answer; a forged tap changes
// nothing.
func TestCommandButtonsOnTelegram(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		scheduleCall("call_1", "2026-11-24 09:00", "Call Mum", false),
		scheduleCall("call_2", "2026-11-25 18:00", "Water the plants", false),
		llmtest.Text("Both set."),
	)
	c.say(t, "remind me to call mum tomorrow at 9 and to water the plants on Wednesday at 6pm", 1)
	requests := len(c.model.Requests())

	sent := c.say(t, "/reminders", 2)
	list := sent[1]
	require.Contains(t, list.Plain, "1. Tue 24 Nov 2026, 09:00: Call Mum\n2. Wed 25 Nov 2026, 18:00: Water the plants\n")
	var labels []string
	for _, row := range list.Buttons {
		for _, b := range row {
			labels = append(labels, b.Text)
		}
	}
	require.Equal(t, []string{"Cancel 1", "Cancel 2"}, labels)
	cancel2 := list.Buttons[len(list.Buttons)-1][len(list.Buttons[len(list.Buttons)-1])-1].Data

	// Forged taps on the listing: a confirmation's data it does not show,
	// a job that is not on it.
	_, err := c.fake.ForgeTap(c.user, list.MessageID, "cf.yes")
	require.NoError(t, err)
	require.Equal(t, core.NoticeStaleButton, c.fake.WaitCallbackAnswers(t, 1, waitFor)[0].Text)
	_, err = c.fake.ForgeTap(c.user, list.MessageID, "cx999")
	require.NoError(t, err)
	require.Equal(t, core.NoticeStaleButton, c.fake.WaitCallbackAnswers(t, 2, waitFor)[1].Text)

	_, err = c.fake.Tap(c.user, list.MessageID, cancel2)
	require.NoError(t, err)
	require.Equal(t, "Cancelled.", c.fake.WaitCallbackAnswers(t, 3, waitFor)[2].Text)
	sent = c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	require.Equal(t, "Cancelled “Water the plants”, which was due Wed 25 Nov 2026, 18:00.", sent[2].Plain)
	jobs := c.jobs(t)
	require.Equal(t, core.JobPending, jobs[0].Status)
	require.Equal(t, core.JobCancelled, jobs[1].Status)
	require.Equal(t, list.Buttons, c.fake.Buttons(c.user.ID, list.MessageID), "the other button still works")

	_, err = c.fake.Tap(c.user, list.MessageID, cancel2)
	require.NoError(t, err)
	require.Equal(t, "Can't cancel: it was already cancelled.", c.fake.WaitCallbackAnswers(t, 4, waitFor)[3].Text)
	c.settle(t)
	require.Len(t, c.fake.Sent(c.user.ID), 3, "a second tap sends nothing")

	// /forget all asks with buttons; "Erase all" erases, once.
	_, _, err = memory.NewFactStore(c.app.store.Database()).Remember(context.Background(), c.conv(t).ID, "Has a sister called Ines", 30, c.clock.Now())
	require.NoError(t, err)
	sent = c.say(t, "/forget all", 4)
	ask := sent[3]
	require.Equal(t, [][]telegramtest.Button{{{Text: "Erase all", Data: "cf.yes"}, {Text: "Keep", Data: "cf.no"}}}, ask.Buttons)
	_, err = c.fake.Tap(c.user, ask.MessageID, "cf.yes")
	require.NoError(t, err)
	require.Equal(t, "Erased.", c.fake.WaitCallbackAnswers(t, 5, waitFor)[4].Text)
	sent = c.fake.WaitSent(t, c.user.ID, 5, waitFor)
	require.Equal(t, "Done: I've forgotten the 1 thing I remembered about you.", sent[4].Plain)
	require.Empty(t, c.facts(t))
	want := [][]telegramtest.Button{{{Text: "✓ Erase all", Data: "cf.yes"}}}
	require.Eventually(t, func() bool { return reflect.DeepEqual(want, c.fake.Buttons(c.user.ID, ask.MessageID)) }, waitFor, 5*time.Millisecond)

	_, err = c.fake.Tap(c.user, ask.MessageID, "cf.yes")
	require.NoError(t, err)
	require.Equal(t, core.NoticeAlreadyAnswered, c.fake.WaitCallbackAnswers(t, 6, waitFor)[5].Text)
	c.settle(t)
	require.Len(t, c.fake.Sent(c.user.ID), 5)

	// The taps are in the transcript as the user's, the answers as the
	// commands'; none of it called the model.
	var taps []string
	for _, m := range c.stored(t) {
		if m.Role == core.RoleUser && m.Source == core.SourceCommand && m.Metadata["command"] == "tap" {
			taps = append(taps, m.Content)
		}
	}
	require.Equal(t, []string{"Cancel 2", "Cancel 2", "Erase all"}, taps)
	require.Len(t, c.model.Requests(), requests, "no model call for a command's button")
}
