package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run on Telegram with voice.replies: always: a reminder
// the model scheduled is spoken at its time and goes out as a voice note,
// its text after it carrying the snooze and done buttons; the message
// stored is the reminder's text. When the speech service fails at the
// next reminder's time, the reminder goes as text with its buttons.
func TestScheduledMessageIsSpokenWithVoiceAlways(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "voice:\n  replies: always\n")
	c.model.Speech.Respond(llmtest.Generates[llmtest.SpeechRequest])
	c.model.Enqueue(
		scheduleCall("call_1", "2026-11-24 09:00", "Time for the dentist.", false),
		llmtest.Text("I'll remind you."),
		scheduleCall("call_2", "2026-11-24 10:00", "Time to call Mum.", false),
		llmtest.Text("Noted."),
	)
	c.fake.SendPrivate(c.user, "remind me tomorrow at 9 about the dentist")
	require.Equal(t, llmtest.OggOpus("I'll remind you."), c.fake.WaitFiles(t, c.user.ID, 1, waitFor)[0].Data, "the turn's reply, spoken")
	c.settle(t)

	c.advance(t, 23*time.Hour) // 09:00 in Berlin
	files := c.fake.WaitFiles(t, c.user.ID, 2, waitFor)
	require.Equal(t, "sendVoice", files[1].Method)
	require.Equal(t, llmtest.OggOpus("Time for the dentist."), files[1].Data, "the reminder, spoken")
	require.Empty(t, files[1].Caption)
	sent := c.fake.WaitSent(t, c.user.ID, 3, waitFor) // the fake lists voice notes too
	require.Equal(t, "voice", sent[1].Kind)
	require.Equal(t, "Time for the dentist.", sent[2].Plain, "its text carries the buttons")
	require.NotEmpty(t, sent[2].Buttons, "snooze and done")
	c.settle(t)
	msgs := c.stored(t)
	last := msgs[len(msgs)-1]
	require.Equal(t, core.SourceScheduledSend, last.Source)
	require.Equal(t, "Time for the dentist.", last.Content)
	require.Equal(t, true, last.Metadata[core.VoiceReplyKey])

	c.fake.SendPrivate(c.user, "and at 10 to call Mum")
	c.fake.WaitFiles(t, c.user.ID, 3, waitFor)
	c.settle(t)
	c.model.Speech.Respond(func(llmtest.SpeechRequest) llmtest.MediaResponse {
		return llmtest.MediaStatus(http.StatusServiceUnavailable)
	})
	c.advance(t, time.Hour)
	sent = c.fake.WaitSent(t, c.user.ID, 5, waitFor)
	require.Equal(t, "Time to call Mum.", sent[4].Plain, "speech failed: the reminder goes as text")
	require.NotEmpty(t, sent[4].Buttons)
	c.settle(t)
	require.Len(t, c.fake.Files(c.user.ID), 3, "no voice note for it")

	// A message routed by the API (no buttons) is its voice note alone.
	c.model.Speech.Respond(llmtest.Generates[llmtest.SpeechRequest])
	code, out := c.api(t, http.MethodPost, "/api/v1/messages", map[string]any{"channel_type": "telegram",
		"channel_thread_id": fmt.Sprint(c.user.ID), "origin": "connector", "text": "Your build passed."})
	require.Equal(t, http.StatusAccepted, code, out)
	files = c.fake.WaitFiles(t, c.user.ID, 4, waitFor)
	require.Equal(t, llmtest.OggOpus("Your build passed."), files[3].Data)
	c.settle(t)
	require.Len(t, c.fake.Sent(c.user.ID), 6, "the voice note alone, no text after it")
	msgs = c.stored(t)
	require.Equal(t, "Your build passed.", msgs[len(msgs)-1].Content, "the text is the message")
}

// With voice.replies always, a question the model asks with choices is
// spoken, and its text follows the voice note carrying the buttons (a
// voice note has nowhere to put them).
func TestSpokenQuestionKeepsItsButtons(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "voice:\n  replies: always\n")
	c.model.Speech.Respond(llmtest.Generates[llmtest.SpeechRequest])
	c.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`)),
		llmtest.Text(""),
	)
	c.fake.SendPrivate(c.user, "make me a drink")
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "voice", sent[0].Kind)
	require.Equal(t, llmtest.OggOpus("Tea or coffee?"), c.fake.Files(c.user.ID)[0].Data)
	require.Equal(t, "Tea or coffee?", sent[1].Plain)
	require.Len(t, sent[1].Buttons, 1)
	require.Equal(t, "Tea", sent[1].Buttons[0][0].Text)
}

// A picture the model draws while it goes on after <WANT_MORE> goes with
// what it adds, once; the reply before it went without it.
func TestPictureDrawnInAContinuationIsSent(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "  images: {enabled: true}\n")
	c.model.Images.Respond(llmtest.Generates[llmtest.ImageRequest])
	c.model.Enqueue(
		llmtest.Text("Let me draw it.\n<WANT_MORE>"),
		llmtest.ToolCalls(llmtest.Call("c1", "generate_image", `{"prompt":"a red kite"}`)),
		llmtest.Text("Here it is."),
	)
	c.fake.SendPrivate(c.user, "draw me a kite")
	files := c.fake.WaitFiles(t, c.user.ID, 1, waitFor)
	c.settle(t)
	require.Equal(t, "sendPhoto", files[0].Method)
	require.Equal(t, llmtest.PNGFor("a red kite"), files[0].Data)
	var texts []string
	for _, m := range c.fake.Sent(c.user.ID) {
		texts = append(texts, m.Plain)
	}
	require.Contains(t, texts, "Let me draw it.")
	require.Contains(t, texts, "Here it is.")
	require.Len(t, c.fake.Files(c.user.ID), 1, "once")
}
