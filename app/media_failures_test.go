package app

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run on Telegram with voice.replies: always: a speech
// service that is slow (past llm.timeout) or answers garbage (not Ogg
// Opus) costs the user nothing: each reply goes as text, once, and the
// log says why.
func TestSpeechFailuresSendTheText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmTimeout = "1s"
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("First answer."), llmtest.Text("Second answer."))
	b.model.Speech.Enqueue(
		llmtest.Generated().WithDelay(10*time.Second),
		llmtest.AudioBytes("audio/ogg", []byte("RIFF not an ogg stream at all")),
	)
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")+"voice:\n  replies: always\n"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("parley's log:\n%s", r.stderr)
		}
	})

	fake.SendPrivate(ada, "first")
	require.Equal(t, "First answer.", fake.WaitSent(t, ada.ID, 1, waitFor)[0].Plain, "slow speech: the text")
	fake.SendPrivate(ada, "second")
	require.Equal(t, "Second answer.", fake.WaitSent(t, ada.ID, 2, waitFor)[1].Plain, "garbage speech: the text")
	require.Empty(t, fake.Files(ada.ID), "no voice note")
	require.Eventually(t, func() bool {
		return strings.Count(r.stderr.String(), "speaking the message failed; sending it as text") == 2
	}, waitFor, 5*time.Millisecond, "the log says why, once a reply")
	require.Contains(t, r.stderr.String(), "not Ogg Opus audio")
	require.Len(t, fake.Sent(ada.ID), 2, "nothing sent twice")
}

// Through parley run on Telegram with plugins.images: an image service
// that is slow, or answers garbage, is a tool error the model reads, and
// the user gets its words; a picture larger than Telegram shows a photo
// (12,000 pixels wide) is scaled to fit and sent once.
func TestPictureFailuresAndOversizedPictures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmTimeout = "1s"
	fake := telegramtest.NewServer(t)
	draw := func(id string) llmtest.Response {
		return llmtest.ToolCalls(llmtest.Call(id, "generate_image", `{"prompt":"a long banner"}`))
	}
	b.model.Enqueue(
		draw("c1"), llmtest.Text("The drawing service is slow today."),
		draw("c2"), llmtest.Text("That came out wrong, sorry."),
		draw("c3"), llmtest.Text("Your banner."),
	)
	b.model.Images.Enqueue(
		llmtest.Generated().WithDelay(10*time.Second),
		llmtest.ImageBytes([]byte("GIF89a but not really")),
		llmtest.ImageBytes(wideBanner(t)),
	)
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")+"plugins:\n  images: {enabled: true}\n"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("parley's log:\n%s", r.stderr)
		}
	})

	fake.SendPrivate(ada, "draw a banner")
	require.Equal(t, "The drawing service is slow today.", fake.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)
	fake.SendPrivate(ada, "again")
	require.Equal(t, "That came out wrong, sorry.", fake.WaitSent(t, ada.ID, 2, waitFor)[1].Plain)
	reqs := b.model.Requests()
	for _, id := range []string{"c1", "c2"} {
		var told string
		for _, q := range reqs {
			if m, ok := q.ToolMessage(id); ok {
				told = m.Content
			}
		}
		require.Contains(t, told, "generate_image: the picture could not be made", "the model is told (%s)", id)
	}
	require.Empty(t, fake.Files(ada.ID))
	require.Equal(t, 2, strings.Count(r.stderr.String(), "generate_image: the picture could not be made; the model is told"), "the log says why")
	require.Contains(t, r.stderr.String(), "timed out")

	fake.SendPrivate(ada, "once more")
	files := fake.WaitFiles(t, ada.ID, 1, waitFor)
	require.Equal(t, "sendPhoto", files[0].Method)
	require.LessOrEqual(t, files[0].Width+files[0].Height, 10000, "scaled to what Telegram shows")
	require.Greater(t, files[0].Width, 20*files[0].Height/2, "still a banner")
	fake.WaitSent(t, ada.ID, 4, waitFor)
	require.Len(t, fake.Files(ada.ID), 1, "sent once")
}

// wideBanner is a 12,000×600 PNG: more than Telegram shows as a photo
// (width and height together at most 10,000).
func wideBanner(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 12000, 600))
	for x := range 12000 {
		img.Set(x, x%600, color.NRGBA{R: uint8(x), G: 80, B: 160, A: 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}
