package app

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run with voice.replies: always, on the web chat: the
// reply is spoken by the speech service (the fake's /audio/speech), goes
// to the page as a voice note alone, and the page loads the Ogg Opus
// bytes; the text is stored as the message. With the speech service
// failing, the next reply goes as text.
func TestVoiceRepliesThroughTheWebChat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, "voice:\n  replies: always\n  voice: nova\n"))
	b.model.Enqueue(llmtest.Text("The tea is *ready*."), llmtest.Text("Still here."))
	b.model.Speech.Enqueue(llmtest.Generated(), llmtest.MediaStatus(http.StatusServiceUnavailable))

	const client = "client-voice-1"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "is the tea ready?")
	m := events.nextWireMessage(t)
	require.Empty(t, m.Text, "the voice note alone")
	require.Len(t, m.Files, 1)
	require.Equal(t, "voice", m.Files[0].Kind)
	require.Equal(t, "audio/ogg", m.Files[0].MIME)

	resp, err := http.Get("http://" + r.addr + m.Files[0].URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	audio, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, llmtest.OggOpus("The tea is ready."), audio, "the plain text, spoken")
	speech := b.model.Speech.Requests()
	require.Len(t, speech, 1)
	require.Equal(t, "nova", speech[0].Voice)

	stored := b.storedMessages(t, client)
	reply := stored[len(stored)-1]
	require.Equal(t, "The tea is *ready*.", reply.Content, "the text is the message")
	require.Equal(t, true, reply.Metadata[core.VoiceReplyKey])

	postMessage(t, r.addr, client, "and now?")
	m = events.nextWireMessage(t)
	require.Equal(t, "Still here.", m.Text, "speech failed: the text goes")
	require.Empty(t, m.Files)
}

// Through parley run with plugins.images on, on the web chat: the model
// calls generate_image, the fake's /images/generations draws it, and the
// picture follows the reply's streamed text. When the image
// service fails, the model is told by a tool error and the user gets its
// words.
func TestGeneratedPictureThroughTheWebChat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, "plugins:\n  images:\n    model: gpt-image-1\n"))
	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "generate_image", `{"prompt":"a grey cat asleep on a teapot"}`)),
		llmtest.Text("Miso, as you asked."),
		llmtest.ToolCalls(llmtest.Call("c2", "generate_image", `{"prompt":"a dog"}`)),
		llmtest.Text("Sorry, I couldn't draw that just now."),
	)
	b.model.Images.Enqueue(llmtest.Generated(), llmtest.MediaStatus(http.StatusInternalServerError))

	const client = "client-picture-1"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "draw Miso")
	m := events.nextWireMessage(t)
	require.Equal(t, "Miso, as you asked.", m.Text, "the streamed reply's text first")
	require.Empty(t, m.Files)
	m = events.nextWireMessage(t)
	require.Empty(t, m.Text, "then its picture, once")
	require.Len(t, m.Files, 1)
	require.Equal(t, "image", m.Files[0].Kind)
	require.Equal(t, "image/png", m.Files[0].MIME)
	resp, err := http.Get("http://" + r.addr + m.Files[0].URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	pic, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, llmtest.PNGFor("a grey cat asleep on a teapot"), pic, "the picture drawn for the prompt")

	postMessage(t, r.addr, client, "and a dog?")
	m = events.nextWireMessage(t)
	require.Equal(t, "Sorry, I couldn't draw that just now.", m.Text)
	require.Empty(t, m.Files)
	reqs := b.model.Requests()
	result, ok := reqs[len(reqs)-1].ToolMessage("c2")
	require.True(t, ok)
	require.Contains(t, result.Content, "generate_image: the picture could not be made")
}

// Through parley run on Telegram with voice.replies: mirror: a voice note
// (transcribed) is answered by a voice note (sendVoice, the fake TTS's
// Ogg Opus), a text by text.
func TestTelegramVoiceNoteAnsweredByVoice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.EnqueueTranscription(llmtest.Transcript("is the bread ready?"))
	b.model.Enqueue(llmtest.Text("Yes, it's out of the oven."), llmtest.Text("You're welcome."))
	b.model.Speech.Respond(llmtest.Generates[llmtest.SpeechRequest])
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")+"voice:\n  replies: mirror\n"))

	fake.SendVoice(ada, telegramtest.Media{Data: []byte("OggS\x00\x02a voice note"), Seconds: 2})
	files := fake.WaitFiles(t, ada.ID, 1, waitFor)
	require.Equal(t, "sendVoice", files[0].Method)
	require.Equal(t, "voice", files[0].Kind)
	require.Equal(t, llmtest.OggOpus("Yes, it's out of the oven."), files[0].Data)
	require.Empty(t, files[0].Caption, "the voice note alone")

	fake.SendPrivate(ada, "thanks")
	sent := fake.WaitSent(t, ada.ID, 2, waitFor)
	require.Equal(t, "You're welcome.", sent[len(sent)-1].Plain, "a text is answered by text")
	require.Len(t, fake.Files(ada.ID), 1)
	require.Len(t, b.model.Speech.Requests(), 1)
}
