package app

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	_ "image/jpeg" // decodes what the model got
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/core/media/mediatest"
)

// decodeDataURL decodes an image_url part's data: URL.
func decodeDataURL(t *testing.T, url string) image.Image {
	t.Helper()
	mime, b64, ok := strings.Cut(strings.TrimPrefix(url, "data:"), ";base64,")
	require.True(t, ok, "a data URL: %.40s", url)
	require.Contains(t, []string{"image/jpeg", "image/png"}, mime)
	raw, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	img, _, err := image.Decode(bytes.NewReader(raw))
	require.NoError(t, err)
	return img
}

// requireNoToken fails if the Telegram bot token reached the model or the
// log.
func requireNoToken(t *testing.T, b *testBundle, fake *telegramtest.Server, logs string) {
	t.Helper()
	for _, r := range b.model.Requests() {
		require.NotContains(t, string(r.Body), fake.Token(), "the bot token reached the model")
	}
	require.NotContains(t, logs, fake.Token(), "the bot token is in the log")
}

// TestTelegramPhotoWithoutCaptionReachesTheModel: a photo alone is
// answered; the model gets it as an image part, scaled to
// media.max_image_px, and never a URL holding the bot's token.
func TestTelegramPhotoWithoutCaptionReachesTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("What a lovely loaf!"))
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	fake.SendPhoto(ada, telegramtest.Media{Data: mediatest.Photo(2400, 1800, 90, false)})
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "What a lovely loaf!", sent[0].Plain)

	req := b.model.Requests()[0]
	urls := req.ImageURLs()
	require.Len(t, urls, 1, "one image part")
	img := decodeDataURL(t, urls[0])
	require.Equal(t, image.Rect(0, 0, 1568, 1176), img.Bounds(), "scaled to media.max_image_px")
	requireNoToken(t, b, fake, r.stderr.String())

	r.stop(t)
	stored := b.storedMessagesOn(t, telegram.Platform, fmt.Sprint(ada.ID))
	files := core.AttachmentsOf(stored[0])
	require.Len(t, files, 1, "the photo is stored with its message")
	require.Equal(t, core.AttachImage, files[0].Kind)
	require.Empty(t, stored[0].Content, "no caption")
}

// TestTelegramVoiceNoteIsTranscribed: a voice note goes to the
// transcription endpoint as received; its transcript is what the model
// reads, and becomes the message's text, so the next turn needs no second
// transcription.
func TestTelegramVoiceNoteIsTranscribed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.EnqueueTranscription(llmtest.Transcript("remind me to buy flour tomorrow"))
	b.model.Enqueue(llmtest.Text("I will!"), llmtest.Text("Flour, yes."))
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	voice := []byte("OggS\x00\x02fake opus voice note bytes")
	fake.SendVoice(ada, telegramtest.Media{Data: voice, Seconds: 3})
	fake.WaitSent(t, ada.ID, 1, waitFor)

	tr := b.model.TranscriptionRequests()
	require.Len(t, tr, 1)
	require.Equal(t, voice, tr[0].File, "sent as received")
	require.Equal(t, "whisper-1", tr[0].Model)
	require.True(t, strings.HasSuffix(tr[0].FileName, ".ogg"), tr[0].FileName)
	require.Contains(t, b.model.Requests()[0].LastUserMessage(), "remind me to buy flour tomorrow")

	fake.SendPrivate(ada, "did you get that?")
	fake.WaitSent(t, ada.ID, 2, waitFor)
	second := b.model.Requests()[1]
	require.Contains(t, allUserText(second), "remind me to buy flour tomorrow", "the transcript is in the history")
	require.Len(t, b.model.TranscriptionRequests(), 1, "transcribed once")
	requireNoToken(t, b, fake, r.stderr.String())

	r.stop(t)
	stored := b.storedMessagesOn(t, telegram.Platform, fmt.Sprint(ada.ID))
	require.Equal(t, "remind me to buy flour tomorrow", stored[0].Content, "the transcript is the message's text")
	require.Equal(t, true, stored[0].Metadata["spoken"])
}

// TestTelegramDocumentsAreRead: a text file's and a PDF's text reach the
// model with their names.
func TestTelegramDocumentsAreRead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("Got the list."), llmtest.Text("Got the report."))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	fake.SendDocument(ada, telegramtest.Media{Data: []byte("Shopping list:\n- flour\n- salt\n"), Name: "list.txt",
		MIME: "application/octet-stream", Caption: "for Saturday"})
	fake.WaitSent(t, ada.ID, 1, waitFor)
	first := b.model.Requests()[0].LastUserMessage()
	require.Contains(t, first, "for Saturday")
	require.Contains(t, first, "list.txt")
	require.Contains(t, first, "- flour\n- salt")

	fake.SendDocument(ada, telegramtest.Media{Data: mediatest.PDF("Quarterly sourdough report"), Name: "report.pdf", MIME: "application/pdf"})
	fake.WaitSent(t, ada.ID, 2, waitFor)
	second := b.model.Requests()[1].LastUserMessage()
	require.Contains(t, second, "report.pdf")
	require.Contains(t, second, "Quarterly sourdough report")
}

// TestTelegramStickerIsAnswered: a sticker is its emoji to the model.
func TestTelegramStickerIsAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("😺 to you too!"))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendSticker(ada, telegramtest.Media{Data: []byte("RIFF fake webp"), Emoji: "😺"})
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "😺 to you too!", sent[0].Plain)
	require.Contains(t, b.model.Requests()[0].LastUserMessage(), "sticker: 😺")
}

// TestTelegramFilesThatCannotBeOpenedAreAnswered: an oversized file, a
// download that keeps failing, a "photo" that is not an image and a voice
// note the transcription server fails on: each time the model is told in
// plain words, and the user gets an answer.
func TestTelegramFilesThatCannotBeOpenedAreAnswered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Sorry, I could not open that.") })
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")+"media: {max_bytes: 1KiB}\n"))

	fake.SendDocument(ada, telegramtest.Media{Data: bytes.Repeat([]byte("big "), 1000), Name: "big.txt", MIME: "text/plain"})
	fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Contains(t, b.model.Requests()[0].LastUserMessage(), "too large to open")

	for range 5 { // more than the adapter retries
		fake.FailNextDownload(telegramtest.ServerError())
	}
	fake.SendDocument(ada, telegramtest.Media{Data: []byte("small"), Name: "small.txt", MIME: "text/plain"})
	fake.WaitSent(t, ada.ID, 2, waitFor)
	require.Contains(t, b.model.Requests()[1].LastUserMessage(), "could not be downloaded")

	fake.SendPhoto(ada, telegramtest.Media{Data: []byte("this is text pretending to be a photo")})
	fake.WaitSent(t, ada.ID, 3, waitFor)
	require.Contains(t, b.model.Requests()[2].LastUserMessage(), "not an image that can be opened")

	b.model.EnqueueTranscription(llmtest.TranscriptionStatus(400).WithErrorMessage("unsupported audio"))
	fake.SendVoice(ada, telegramtest.Media{Data: []byte("OggS garbled")})
	sent := fake.WaitSent(t, ada.ID, 4, waitFor)
	require.Contains(t, b.model.Requests()[3].LastUserMessage(), "could not be transcribed")
	for _, s := range sent {
		require.Equal(t, "Sorry, I could not open that.", s.Plain, "every file was answered")
	}

	// A later turn of the session tells the model again, without trying
	// those files again.
	downloads, transcriptions := fake.Downloads(), len(b.model.TranscriptionRequests())
	fake.SendPrivate(ada, "and now?")
	fake.WaitSent(t, ada.ID, 5, waitFor)
	later := allUserText(b.model.Requests()[4])
	for _, said := range []string{"too large to open", "could not be downloaded", "not an image that can be opened", "could not be transcribed"} {
		require.Contains(t, later, said)
	}
	require.Equal(t, downloads, fake.Downloads(), "no file was fetched again")
	require.Len(t, b.model.TranscriptionRequests(), transcriptions, "nothing was transcribed again")
	requireNoToken(t, b, fake, r.stderr.String())
}

// TestTelegramAlbumIsOneTurn: photos sent together are answered in one
// turn, at most media.max_per_turn of them opened.
func TestTelegramAlbumIsOneTurn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.Text("Three lovely photos!"))
	cfg := fmt.Sprintf(`adapters:
  web: {enabled: false}
  telegram: {token: "%s", api_url: "%s"}
runs:
  debounce: 1s
media: {max_per_turn: 2}
`, fake.Token(), fake.URL())
	b.start(t, b.writeConfig(t, cfg))
	for i := range 3 {
		fake.SendPhoto(ada, telegramtest.Media{Data: mediatest.Photo(64+i, 48, 90, false)})
	}
	fake.WaitSent(t, ada.ID, 1, waitFor)
	reqs := b.model.Requests()
	require.Len(t, reqs, 1, "one turn for the album")
	require.Len(t, reqs[0].ImageURLs(), 2, "media.max_per_turn images opened")
	require.Contains(t, allUserText(reqs[0]), "not opened", "the third is described")
}

// allUserText is the text of every user message of a request, image
// parts left out.
func allUserText(r llmtest.Request) string {
	var b strings.Builder
	for _, m := range r.Chat.Messages {
		if m.Role != "user" {
			continue
		}
		b.WriteString(m.Content + "\n")
		for _, p := range m.MultiContent {
			b.WriteString(p.Text + "\n")
		}
	}
	return b.String()
}

// TestSlackFileSharesReachTheModel: on Slack, a shared photo is an image
// part, a voice clip is transcribed and a document is read, each answered;
// the bot token goes to no model request.
func TestSlackFileSharesReachTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Got it.") })
	b.model.EnqueueTranscription(llmtest.Transcript("call the baker at noon"))
	fake, r := startSlack(t, b, "socket")

	shared := fake.ShareFile(mei, slacktest.File{Name: "loaf.jpg", MIME: "image/jpeg", Data: mediatest.Photo(640, 480, 90, false)})
	fake.WaitSent(t, shared.Channel, 1, waitFor)
	urls := b.model.Requests()[0].ImageURLs()
	require.Len(t, urls, 1)
	require.Equal(t, image.Rect(0, 0, 640, 480), decodeDataURL(t, urls[0]).Bounds())

	fake.ShareFile(mei, slacktest.File{Name: "clip.webm", MIME: "audio/webm", Data: []byte("webm voice"), VoiceClip: true})
	fake.WaitSent(t, shared.Channel, 2, waitFor)
	require.Contains(t, b.model.Requests()[1].LastUserMessage(), "call the baker at noon")
	require.Equal(t, []byte("webm voice"), b.model.TranscriptionRequests()[0].File)

	fake.ShareFile(mei, slacktest.File{Name: "recipe.md", MIME: "text/markdown", Data: []byte("# Rye\n500 g flour"), Text: "try this"})
	fake.WaitSent(t, shared.Channel, 3, waitFor)
	last := b.model.Requests()[2].LastUserMessage()
	require.Contains(t, last, "try this")
	require.Contains(t, last, "500 g flour")

	for _, req := range b.model.Requests() {
		require.NotContains(t, string(req.Body), fake.BotToken())
	}
	require.NotContains(t, r.stderr.String(), fake.BotToken())
}

// TestDiscordAttachmentsReachTheModel: on Discord, an attachment-only
// image is an image part, a voice message is transcribed, a PDF is read
// and a sticker is answered.
func TestDiscordAttachmentsReachTheModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Got it.") })
	b.model.EnqueueTranscription(llmtest.Transcript("the oven is preheating"))
	b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)

	channel, _ := fake.SendFiles(lin, "", discordtest.File{Filename: "loaf.png", ContentType: "image/png", Data: pngOf(t, 320, 200)})
	fake.WaitSent(t, channel, 1, waitFor)
	urls := b.model.Requests()[0].ImageURLs()
	require.Len(t, urls, 1)
	require.Equal(t, image.Rect(0, 0, 320, 200), decodeDataURL(t, urls[0]).Bounds())

	fake.SendVoiceMessage(lin, discordtest.File{Data: []byte("OggS discord voice"), DurationSecs: 2})
	fake.WaitSent(t, channel, 2, waitFor)
	require.Contains(t, b.model.Requests()[1].LastUserMessage(), "the oven is preheating")

	fake.SendFiles(lin, "the report", discordtest.File{Filename: "report.pdf", ContentType: "application/pdf", Data: mediatest.PDF("Rye rises slowly")})
	fake.WaitSent(t, channel, 3, waitFor)
	require.Contains(t, b.model.Requests()[2].LastUserMessage(), "Rye rises slowly")

	fake.SendSticker(lin, "", discordtest.Sticker{Name: "wave", Data: pngOf(t, 16, 16)})
	fake.WaitSent(t, channel, 4, waitFor)
	require.Contains(t, b.model.Requests()[3].LastUserMessage(), "sticker (wave)")
	for _, req := range b.model.Requests() {
		require.NotContains(t, string(req.Body), fake.Token())
	}
}

// pngOf is a w×h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, w, h))))
	return buf.Bytes()
}

// TestWithoutVisionOrTranscriptionTheModelIsTold: llm.vision off and
// llm.transcription.model "": the model is told what came that it cannot
// see or hear, and the user is answered.
func TestWithoutVisionOrTranscriptionTheModelIsTold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmExtra = "  vision: false\n  transcription: {model: \"\"}\n"
	fake := telegramtest.NewServer(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("I can't see or hear that, sorry.") })
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPhoto(ada, telegramtest.Media{Data: mediatest.Photo(64, 48, 90, false), Caption: "look!"})
	fake.WaitSent(t, ada.ID, 1, waitFor)
	first := b.model.Requests()[0]
	require.Empty(t, first.ImageURLs(), "no image part")
	require.Contains(t, first.LastUserMessage(), "look!")
	require.Contains(t, first.LastUserMessage(), "which you cannot see")

	fake.SendVoice(ada, telegramtest.Media{Data: []byte("OggS")})
	fake.WaitSent(t, ada.ID, 2, waitFor)
	require.Contains(t, b.model.Requests()[1].LastUserMessage(), "voice transcription is off")
	require.Empty(t, b.model.TranscriptionRequests())
	require.Zero(t, fake.Downloads(), "nothing was downloaded")
	require.Contains(t, r.stderr.String(), "voice transcription is off")
}
