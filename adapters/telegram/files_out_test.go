package telegram

import (
	"bytes"
	"context"
	"crypto/rand"
	"image"
	"image/png"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

// sendFiles sends files to a chat with text as their caption.
func (b *testBundle) sendFiles(chatID int64, text string, f core.TextFormat, files ...core.OutboundFile) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.SendFiles(ctx, core.OutboundMessage{
		ChannelThreadID: strconv.FormatInt(chatID, 10), Text: text, Format: f, Files: files,
	})
}

// noisePNG is a w×h PNG of random pixels (colour and transparency): it
// barely compresses, 4 bytes a pixel.
func noisePNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	_, err := rand.Read(img.Pix)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func TestSendFilesEachKindArrivesWithItsBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	pic := noisePNG(t, 64, 48)
	files := []core.OutboundFile{
		{Kind: core.AttachImage, Name: "chart.png", MIME: "image/png", Data: pic},
		{Kind: core.AttachDocument, Name: "export.json", MIME: "application/json", Data: []byte(`{"facts":[]}`)},
		{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: []byte("OggS\x00opus voice")},
		{Kind: core.AttachAudio, Name: "song.mp3", MIME: "audio/mpeg", Data: []byte("ID3 song")},
	}

	res, err := b.sendFiles(ada.ID, "Here is **everything** you asked for.", core.FormatRichText, files...)
	require.NoError(t, err)

	got := b.srv.Files(ada.ID)
	require.Len(t, got, 4)
	kinds := []string{"photo", "document", "voice", "audio"}
	for i, f := range got {
		require.Equal(t, kinds[i], f.Kind)
		require.Equal(t, files[i].Name, f.Name)
		require.Equal(t, files[i].MIME, f.MIME)
		require.Equal(t, files[i].Data, f.Data)
		require.Equal(t, strconv.Itoa(f.MessageID), res.PlatformMessageIDs[i])
	}
	require.Equal(t, "Here is everything you asked for.", got[0].CaptionPlain, "the caption is on the first file")
	require.Equal(t, "MarkdownV2", got[0].ParseMode)
	require.Equal(t, "everything", got[0].CaptionPlain[got[0].Entities[0].Offset:][:got[0].Entities[0].Length])
	for _, f := range got[1:] {
		require.Empty(t, f.Caption)
	}
	require.Len(t, res.PlatformMessageIDs, 4, "no text message besides the files")
	require.Len(t, b.srv.Sent(ada.ID), 4)
}

func TestSendFilesLongCaptionFollowsAsText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	long := strings.Repeat("A long caption. ", 100) // 1,600 characters
	doc := core.OutboundFile{Kind: core.AttachDocument, Name: "a.txt", MIME: "text/plain", Data: []byte("a")}
	voice := core.OutboundFile{Kind: core.AttachVoice, Name: "v.ogg", MIME: "audio/ogg", Data: []byte("OggS")}

	res, err := b.sendFiles(ada.ID, long, core.FormatRichText, doc, voice)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 3)
	require.Equal(t, []string{"document", "voice", ""}, []string{sent[0].Kind, sent[1].Kind, sent[2].Kind})
	require.Empty(t, sent[0].Text, "no cut caption")
	require.Equal(t, strings.TrimSpace(long), strings.TrimSpace(sent[2].Plain))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestSendFilesScalesAnOversizedPicture(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	big := noisePNG(t, 1900, 1450) // 11 MB of noise
	require.Greater(t, len(big), telegramtest.MaxPhotoUpload)

	_, err := b.sendFiles(ada.ID, "the big one", core.FormatText,
		core.OutboundFile{Kind: core.AttachImage, Name: "big.png", MIME: "image/png", Data: big})
	require.NoError(t, err)

	got := b.srv.Files(ada.ID)
	require.Len(t, got, 1)
	require.Equal(t, "photo", got[0].Kind)
	require.LessOrEqual(t, len(got[0].Data), telegramtest.MaxPhotoUpload)
	img, format, err := image.Decode(bytes.NewReader(got[0].Data))
	require.NoError(t, err, "the fake got a picture it can decode")
	require.Equal(t, "jpeg", format)
	require.Equal(t, "big.jpg", got[0].Name)
	require.Equal(t, image.Rect(0, 0, 1900, 1450), img.Bounds(), "as large as it was: it is the bytes that were too many")
	require.Equal(t, "the big one", got[0].CaptionPlain)
}

func TestSendFilesRefusesAnOversizedDocument(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	small := core.OutboundFile{Kind: core.AttachDocument, Name: "small.txt", Data: []byte("fine")}
	huge := core.OutboundFile{Kind: core.AttachDocument, Name: "dump.bin", Data: make([]byte, 50<<20+1)}

	res, err := b.sendFiles(ada.ID, "", core.FormatText, small, huge)

	var perm *core.PermanentError
	require.ErrorAs(t, err, &perm)
	require.Contains(t, err.Error(), `"dump.bin"`)
	require.Contains(t, err.Error(), "50.0 MB limit")
	require.Empty(t, res.PlatformMessageIDs)
	require.Empty(t, b.srv.Files(ada.ID), "nothing sent when one file cannot go")
	require.Zero(t, b.srv.Calls("sendDocument"))
}

func TestSendFilesRetriesA429(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendDocument", telegramtest.TooManyRequests(1))
	data := []byte("report body")

	began := time.Now()
	res, err := b.sendFiles(ada.ID, "report", core.FormatText,
		core.OutboundFile{Kind: core.AttachDocument, Name: "report.txt", MIME: "text/plain", Data: data})
	require.NoError(t, err)

	got := b.srv.Files(ada.ID)
	require.Len(t, got, 1, "delivered exactly once")
	require.Equal(t, data, got[0].Data, "the retry sends the whole file again")
	require.GreaterOrEqual(t, time.Since(began), time.Second, "not before retry_after")
	require.Equal(t, 2, b.srv.Calls("sendDocument"))
	require.Equal(t, []string{strconv.Itoa(got[0].MessageID)}, res.PlatformMessageIDs)
}

func TestSendFilesLaterFailureKeepsDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.maxServerRetries = 1 })
	b.greet(t, ada)
	b.srv.FailNext("sendAudio", telegramtest.ServerError())
	b.srv.FailNext("sendAudio", telegramtest.ServerError())

	res, err := b.sendFiles(ada.ID, "", core.FormatText,
		core.OutboundFile{Kind: core.AttachDocument, Name: "a.txt", Data: []byte("a")},
		core.OutboundFile{Kind: core.AttachAudio, Name: "b.mp3", Data: []byte("ID3")})

	require.ErrorContains(t, err, `file 2 of 2 ("b.mp3")`)
	got := b.srv.Files(ada.ID)
	require.Len(t, got, 1)
	require.Equal(t, []string{strconv.Itoa(got[0].MessageID)}, res.PlatformMessageIDs)
}

func TestSendFilesRefusedCaptionGoesPlain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.RefuseMarkupAfter(0)

	_, err := b.sendFiles(ada.ID, "**bold** caption", core.FormatRichText,
		core.OutboundFile{Kind: core.AttachDocument, Name: "a.txt", Data: []byte("a")})
	require.NoError(t, err)

	got := b.srv.Files(ada.ID)
	require.Len(t, got, 1)
	require.Equal(t, "bold caption", got[0].Caption)
	require.Empty(t, got[0].ParseMode)
	require.Contains(t, b.logs.String(), "refused a file caption's markup")
}

func TestSendFilesChoicesGoOnTheText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := b.adapter.SendFiles(ctx, core.OutboundMessage{
		ChannelThreadID: strconv.FormatInt(ada.ID, 10), Text: "Keep this file?",
		Files:   []core.OutboundFile{{Kind: core.AttachDocument, Name: "a.txt", Data: []byte("a")}},
		Choices: []core.Choice{{Label: "Yes", Data: "yes"}, {Label: "No", Data: "no"}},
	})
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 2)
	require.Equal(t, "document", sent[0].Kind)
	require.Empty(t, sent[0].Text, "the question is not the file's caption")
	require.Equal(t, "Keep this file?", sent[1].Plain)
	require.NotEmpty(t, sent[1].Buttons, "the buttons are under the question")
	require.Equal(t, "yes", sent[1].Buttons[0][0].Data)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestSendFilesRetriesA5xx(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendPhoto", telegramtest.ServerError())
	pic := noisePNG(t, 8, 8)

	res, err := b.sendFiles(ada.ID, "", core.FormatText, core.OutboundFile{Kind: core.AttachImage, Name: "p.png", Data: pic})
	require.NoError(t, err)

	got := b.srv.Files(ada.ID)
	require.Len(t, got, 1, "delivered exactly once")
	require.Equal(t, pic, got[0].Data)
	require.Equal(t, 2, b.srv.Calls("sendPhoto"))
	require.Equal(t, []string{strconv.Itoa(got[0].MessageID)}, res.PlatformMessageIDs)
}
