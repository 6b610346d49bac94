package telegramtest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// pngOf is a w×h PNG.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, 0, color.RGBA{R: uint8(x), A: 255})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func upload(name string, data []byte) *models.InputFileUpload {
	return &models.InputFileUpload{Filename: name, Data: bytes.NewReader(data)}
}

func TestUploadsRecordedWithBytes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()
	pic := pngOf(t, 40, 30)

	photo, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: upload("cat.png", pic),
		Caption: `A *cat*\.`, ParseMode: models.ParseModeMarkdown})
	require.NoError(t, err)
	require.Equal(t, "A cat.", photo.Caption)
	require.Equal(t, 40, photo.Photo[len(photo.Photo)-1].Width)
	doc, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("export.json", []byte(`{"a":1}`))})
	require.NoError(t, err)
	require.Equal(t, "export.json", doc.Document.FileName)
	require.Equal(t, "application/json", doc.Document.MimeType)
	voice, err := b.SendVoice(ctx, &bot.SendVoiceParams{ChatID: tb.alice.ID, Voice: upload("reply.ogg", []byte("OggS opus"))})
	require.NoError(t, err)
	require.NotNil(t, voice.Voice)
	require.Equal(t, int64(9), voice.Voice.FileSize)
	audio, err := b.SendAudio(ctx, &bot.SendAudioParams{ChatID: tb.alice.ID, Audio: upload("song.mp3", []byte("ID3 song"))})
	require.NoError(t, err)
	require.Equal(t, "song.mp3", audio.Audio.FileName)

	files := tb.srv.WaitFiles(t, tb.alice.ID, 4, wait)
	require.Len(t, files, 4)
	require.Equal(t, "sendPhoto", files[0].Method)
	require.Equal(t, "photo", files[0].Kind)
	require.Equal(t, pic, files[0].Data)
	require.Equal(t, "image/png", files[0].MIME)
	require.Equal(t, `A *cat*\.`, files[0].Caption)
	require.Equal(t, "A cat.", files[0].CaptionPlain)
	require.Equal(t, []models.MessageEntity{{Type: models.MessageEntityTypeBold, Offset: 2, Length: 3}}, files[0].Entities)
	require.Equal(t, photo.ID, files[0].MessageID)
	require.Equal(t, []byte(`{"a":1}`), files[1].Data)
	require.Equal(t, "document", files[1].Kind)
	require.Equal(t, "voice", files[2].Kind)
	require.Equal(t, "audio/ogg", files[2].MIME)
	require.Equal(t, "audio", files[3].Kind)
	require.Equal(t, "audio/mpeg", files[3].MIME)

	// Each is a message of the chat too, in order.
	sent := tb.srv.Sent(tb.alice.ID)
	require.Len(t, sent, 4)
	require.Equal(t, []string{"photo", "document", "voice", "audio"}, []string{sent[0].Kind, sent[1].Kind, sent[2].Kind, sent[3].Kind})
}

func TestUploadsRefusedLikeTelegram(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()

	// Over sendPhoto's 10 MB: Telegram refuses the file.
	big := make([]byte, telegramtest.MaxPhotoUpload+1)
	copy(big, pngOf(t, 4, 4))
	_, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: upload("big.png", big)})
	require.ErrorIs(t, err, bot.ErrorBadRequest)
	require.ErrorContains(t, err, "file is too big")
	// A document may be bigger than a photo, not over 50 MB.
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("big.bin", big)})
	require.NoError(t, err)
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID,
		Document: upload("huge.bin", make([]byte, telegramtest.MaxFileUpload+1))})
	require.ErrorContains(t, err, "Bad Request: file is too big")
	// A request past what the front takes never reaches the Bot API.
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID,
		Document: upload("vast.bin", make([]byte, 64<<20+1))})
	require.ErrorContains(t, err, "Request Entity Too Large")

	_, err = b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: upload("not.png", []byte("not a picture"))})
	require.ErrorContains(t, err, "IMAGE_PROCESS_FAILED")
	_, err = b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: upload("strip.png", pngOf(t, 2100, 100))})
	require.ErrorContains(t, err, "PHOTO_INVALID_DIMENSIONS")
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("empty.txt", nil)})
	require.Error(t, err, "an empty file is refused")
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("a.txt", []byte("x")),
		Caption: strings.Repeat("a", 1025)})
	require.ErrorContains(t, err, "message caption is too long")
	_, err = b.SendAudio(ctx, &bot.SendAudioParams{ChatID: tb.alice.ID, Audio: upload("a.mp3", []byte("x")),
		Caption: "5.00", ParseMode: models.ParseModeMarkdown})
	require.ErrorContains(t, err, "can't parse entities")
	_, err = b.SendVoice(ctx, &bot.SendVoiceParams{ChatID: 31337, Voice: upload("v.ogg", []byte("OggS"))})
	require.ErrorContains(t, err, "chat not found")

	files := tb.srv.Files(tb.alice.ID)
	require.Len(t, files, 1, "only the 10 MB document went through")
	require.Len(t, files[0].Data, telegramtest.MaxPhotoUpload+1)
}

func TestUploadVoiceNotOggIsADocument(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	msg, err := b.SendVoice(context.Background(), &bot.SendVoiceParams{ChatID: tb.alice.ID, Voice: upload("v.wav", []byte("RIFF wave"))})
	require.NoError(t, err)
	require.Nil(t, msg.Voice)
	require.NotNil(t, msg.Document)
	require.Equal(t, "document", tb.srv.Files(tb.alice.ID)[0].Kind)
}

func TestUploadFaults(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()
	tb.srv.FailNext("sendDocument", telegramtest.TooManyRequests(3))
	_, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("a.txt", []byte("x"))})
	var tooMany *bot.TooManyRequestsError
	require.ErrorAs(t, err, &tooMany)
	require.Equal(t, 3, tooMany.RetryAfter)
	tb.srv.FailNext("sendVoice", telegramtest.ServerError())
	_, err = b.SendVoice(ctx, &bot.SendVoiceParams{ChatID: tb.alice.ID, Voice: upload("v.ogg", []byte("OggS"))})
	require.Error(t, err)
	require.Empty(t, tb.srv.Files(tb.alice.ID), "a refused call records nothing")
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("a.txt", []byte("x"))})
	require.NoError(t, err)
	require.Len(t, tb.srv.Files(tb.alice.ID), 1)
}

// WithUploadDigests: an upload is read as it streams; the fake keeps its
// size and SHA-256, not its bytes, and still checks it as Telegram does
// (a photo's size read, a voice note that is not Ogg a document, the
// limit).
func TestUploadDigestsKeepNoBytes(t *testing.T) {
	t.Parallel()
	tb := setup(t, telegramtest.WithUploadDigests())
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()
	big := bytes.Repeat([]byte("minutes of the meeting\n"), 100_000)
	doc, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("minutes.txt", big), Caption: "The minutes."})
	require.NoError(t, err)
	require.Equal(t, int64(len(big)), doc.Document.FileSize)
	pic, err := b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: upload("cat.png", pngOf(t, 40, 30))})
	require.NoError(t, err)
	require.Equal(t, 40, pic.Photo[len(pic.Photo)-1].Width)
	_, err = b.SendVoice(ctx, &bot.SendVoiceParams{ChatID: tb.alice.ID, Voice: upload("reply.mp3", []byte("ID3 not ogg"))})
	require.NoError(t, err)
	_, err = b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: tb.alice.ID, Document: upload("empty.txt", nil)})
	require.ErrorContains(t, err, "file must be non-empty")

	files := tb.srv.WaitFiles(t, tb.alice.ID, 3, wait)
	sum := sha256.Sum256(big)
	require.Nil(t, files[0].Data)
	require.Equal(t, len(big), files[0].Size)
	require.Equal(t, hex.EncodeToString(sum[:]), files[0].SHA256)
	require.Equal(t, "text/plain", files[0].MIME)
	require.Equal(t, "The minutes.", files[0].CaptionPlain)
	require.Equal(t, "document", files[2].Kind, "not Ogg: a document")
}
