package discord

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
)

// voiceFlag is Discord's IS_VOICE_MESSAGE.
const voiceFlag = 1 << 13

// sendFiles sends msg through the adapter's FileSender.
func (b *testBundle) sendFiles(msg core.OutboundMessage) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.SendFiles(ctx, msg)
}

// smallPNG is a 3×2 PNG.
func smallPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 3, 2))))
	return buf.Bytes()
}

// voiceNote is a 2.5-second Ogg Opus voice note (testdata/voice.ogg).
func voiceNote(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/voice.ogg")
	require.NoError(t, err)
	return data
}

// attachmentNames lists the filenames of a message's attachments.
func attachmentNames(m discordtest.SentMessage) []string {
	var out []string
	for _, a := range m.Attachments {
		out = append(out, a.Filename)
	}
	return out
}

func TestSendFilesSendsEachKindWithItsCaption(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	pic, ogg := smallPNG(t), voiceNote(t)

	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-50", Text: "Here you are <@1>", Files: []core.OutboundFile{
		{Kind: core.AttachImage, Name: "chart.png", MIME: "image/png", Data: pic},
		{Kind: core.AttachDocument, Name: "export.json", MIME: "application/json", Data: []byte(`{"a":1}`)},
		{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: ogg},
		{Kind: core.AttachAudio, Name: "song.mp3", MIME: "audio/mpeg", Data: []byte("ID3 mp3")},
	}})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 3, "the files before the voice note, the voice note alone, the file after it")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, []string{"chart.png", "export.json"}, attachmentNames(sent[0]))
	require.Equal(t, "Here you are <@1>", sent[0].Content, "the caption is the first message's content")
	require.Equal(t, pic, sent[0].Attachments[0].Data)
	require.Equal(t, "image/png", sent[0].Attachments[0].ContentType)
	require.Equal(t, []byte(`{"a":1}`), sent[0].Attachments[1].Data)
	require.Zero(t, sent[0].Flags)

	voice := sent[1]
	require.Equal(t, voiceFlag, voice.Flags, "a voice message")
	require.Empty(t, voice.Content)
	require.Equal(t, []string{"reply.ogg"}, attachmentNames(voice))
	require.Equal(t, ogg, voice.Attachments[0].Data)
	require.Equal(t, "audio/ogg", voice.Attachments[0].ContentType)
	require.InDelta(t, 2.5, voice.Attachments[0].DurationSecs, 1e-9, "read from the Ogg data")
	require.NotEmpty(t, voice.Attachments[0].Waveform)

	require.Equal(t, []string{"song.mp3"}, attachmentNames(sent[2]))
	require.Zero(t, sent[2].Flags)
	require.Equal(t, []string{"run-50.0", "run-50.1", "run-50.2"}, []string{sent[0].Nonce, sent[1].Nonce, sent[2].Nonce})
	for _, m := range sent {
		require.True(t, m.EnforceNonce)
	}
}

func TestSendFilesRichCaptionIsDiscordMarkdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-51", Format: core.FormatRichText,
		Text: "**Your** export, 2 * 3", Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "a.txt", MIME: "text/plain", Data: []byte("a")}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	shown := markuptest.Discord(sent[0].Content)
	require.Equal(t, "Your export, 2 * 3", shown.Text)
	require.Equal(t, []string{"Your"}, shown.Styled(markuptest.Bold))
}

func TestSendFilesLongCaptionFollowsTheFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	text := strings.Repeat("word ", 900) // 4500 characters

	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-52", Text: text,
		Files: []core.OutboundFile{{Kind: core.AttachImage, Name: "a.png", MIME: "image/png", Data: smallPNG(t)}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 4, "the picture, then the text in three parts")
	require.Empty(t, sent[0].Content, "files first, with no content")
	require.Len(t, sent[0].Attachments, 1)
	var shown strings.Builder
	for i, m := range sent[1:] {
		require.Empty(t, m.Attachments)
		require.LessOrEqual(t, utf8.RuneCountInString(m.Content), 2000)
		require.Equal(t, "run-52/c."+string(rune('0'+i)), m.Nonce, "the text's nonces are its own")
		shown.WriteString(m.Content + " ")
	}
	require.Equal(t, strings.Fields(text), strings.Fields(shown.String()))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestSendFilesVoiceNoteCaptionFollowsIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-53", Text: "what I said",
		Files: []core.OutboundFile{{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: voiceNote(t)}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	require.Equal(t, voiceFlag, sent[0].Flags)
	require.Empty(t, sent[0].Content, "a voice message has no content")
	require.Equal(t, "what I said", sent[1].Content)
}

func TestSendFilesVoiceNoteThatIsNotOggGoesAsAudio(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-54",
		Files: []core.OutboundFile{{Kind: core.AttachVoice, Name: "reply.mp3", MIME: "audio/mpeg", Data: []byte("ID3 not ogg")}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Zero(t, sent[0].Flags, "not a voice message: its length cannot be read")
	require.Equal(t, []string{"reply.mp3"}, attachmentNames(sent[0]))
	require.Equal(t, "audio/mpeg", sent[0].Attachments[0].ContentType)
	require.Contains(t, b.logs.String(), "sending it as an audio file")
}

func TestSendFilesOverTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	big := make([]byte, discordtest.MaxUpload+1)
	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-55",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "dump.bin", MIME: "application/octet-stream", Data: big}}})
	reason := permanentReason(t, err)
	require.Contains(t, reason, `"dump.bin"`)
	require.Contains(t, reason, "10.0 MB", "the limit")
	require.Empty(t, b.srv.Sent(ch), "nothing sent")
	require.Zero(t, b.srv.Calls("messages"))

	// Two files that fit alone but not together go as two messages.
	half := make([]byte, discordtest.MaxUpload/2+1)
	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-56", Files: []core.OutboundFile{
		{Kind: core.AttachDocument, Name: "a.bin", Data: half}, {Kind: core.AttachDocument, Name: "b.bin", Data: half}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, "application/octet-stream", sent[1].Attachments[0].ContentType, "no type given: a generic one")
}

// noisePNG is an opaque PNG of random pixels, which does not compress:
// 2000×2000 is about 12 MB.
func noisePNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 2000, 2000))
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(img.Pix); i += 4 {
		v := r.Uint32()
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(v), byte(v>>8), byte(v>>16), 255
	}
	var buf bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img))
	return buf.Bytes()
}

func TestSendFilesScalesAPictureOverTheLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	pic := noisePNG(t)
	require.Greater(t, len(pic), discordtest.MaxUpload)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-57", Text: "big",
		Files: []core.OutboundFile{{Kind: core.AttachImage, Name: "noise.png", MIME: "image/png", Data: pic}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	a := sent[0].Attachments[0]
	require.Equal(t, "noise.jpg", a.Filename, "re-encoded as JPEG")
	require.Equal(t, "image/jpeg", a.ContentType)
	require.LessOrEqual(t, a.Size, discordtest.MaxUpload)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(a.Data))
	require.NoError(t, err)
	require.Equal(t, "jpeg", format)
	require.Equal(t, color.YCbCrModel, cfg.ColorModel)
	require.Equal(t, 2000, cfg.Width, "no smaller than it had to be")
}

func TestSendFilesRetriesAndNeverSendsTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.RateLimitNext("messages", 20*time.Millisecond)
	b.srv.FailNext("messages", http.StatusInternalServerError, 0, "500: Internal Server Error")
	msg := core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-58", Text: "once",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "a.txt", MIME: "text/plain", Data: []byte("a")}}}

	res, err := b.sendFiles(msg)
	require.NoError(t, err)
	require.Equal(t, 3, b.srv.Calls("messages"), "the 429, the 500, then the message")
	again, err := b.sendFiles(msg)
	require.NoError(t, err)
	require.Equal(t, res.PlatformMessageIDs, again.PlatformMessageIDs, "the nonce returned the same message")
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, []byte("a"), sent[0].Attachments[0].Data)
}

func TestSendFilesRefusedCaptionMarkupGoesAfterTheFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-59", Format: core.FormatRichText, Text: "**bold** caption",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "a.txt", MIME: "text/plain", Data: []byte("a")}}})
	require.NoError(t, err, "a file is never lost to its caption's markup")
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	require.Empty(t, sent[0].Content)
	require.Len(t, sent[0].Attachments, 1)
	require.Equal(t, "bold caption", markuptest.Discord(sent[1].Content).Text)
	require.Contains(t, b.logs.String(), "discord refused a caption's markup")
}

func TestSendFilesToABlockedUserIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.Block(ada.ID)
	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-60",
		Files: []core.OutboundFile{{Kind: core.AttachDocument, Name: "a.txt", Data: []byte("a")}}})
	require.Contains(t, permanentReason(t, err), "does not accept DMs")
	require.ErrorContains(t, err, `"a.txt"`)
}

func TestSendFilesLostAnswerIsNotSentTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.LoseNextAnswer("messages")

	res, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-61", Text: "once",
		Files: []core.OutboundFile{{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: voiceNote(t)}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2, "the voice message once, then its text")
	require.Equal(t, voiceFlag, sent[0].Flags)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, 3, b.srv.Calls("messages"), "the create whose answer was lost, its repeat, the text")
}

func TestSendFilesChoicesGoOnTheTextAfterTheFiles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	_, err := b.sendFiles(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-62", Text: "Keep it?", Choices: choicesOf("Yes", "No"),
		Files: []core.OutboundFile{{Kind: core.AttachImage, Name: "a.png", MIME: "image/png", Data: smallPNG(t)}}})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	require.Empty(t, sent[0].Content)
	require.Empty(t, sent[0].Buttons())
	require.Equal(t, "Keep it?", sent[1].Content)
	var labels []string
	for _, btn := range sent[1].Buttons() {
		labels = append(labels, btn.Label)
	}
	require.Equal(t, []string{"Yes", "No"}, labels)
}
