package telegramtest_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"net/http"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// get downloads path from the fake with a raw GET.
func (tb *testBundle) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, tb.srv.URL()+path, nil)
	require.NoError(t, err)
	resp, err := tb.client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

func TestFilesAreServed(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, updates := tb.newBot(t)
	start(t, b)

	var img bytes.Buffer
	require.NoError(t, png.Encode(&img, image.NewGray(image.Rect(0, 0, 40, 30))))
	tb.srv.SendPhoto(tb.alice, telegramtest.Media{Data: img.Bytes(), Caption: "look"})
	tb.srv.SendVoice(tb.alice, telegramtest.Media{Data: []byte("OggS"), Seconds: 3})
	tb.srv.SendAudio(tb.alice, telegramtest.Media{Data: []byte("ID3"), Name: "a.mp3", MIME: "audio/mpeg"})
	tb.srv.SendVideo(tb.alice, telegramtest.Media{Data: []byte("mp4"), Name: "v.mp4", MIME: "video/mp4", Width: 4, Height: 3})
	tb.srv.SendDocument(tb.alice, telegramtest.Media{Data: []byte("hello"), Name: "n.txt", MIME: "text/plain"})
	tb.srv.SendSticker(tb.alice, telegramtest.Media{Data: []byte("RIFF"), Emoji: "😺", Caption: "dropped"})

	photo := receive(t, updates).Message
	require.Equal(t, "look", photo.Caption)
	require.Len(t, photo.Photo, 2, "a thumbnail and the photo, smallest first")
	largest := photo.Photo[1]
	require.Equal(t, 40, largest.Width, "the size read from the PNG")
	require.Equal(t, 30, largest.Height)
	require.Equal(t, img.Len(), largest.FileSize)

	voice := receive(t, updates).Message.Voice
	require.Equal(t, "audio/ogg", voice.MimeType)
	require.Equal(t, 3, voice.Duration)
	require.Equal(t, "a.mp3", receive(t, updates).Message.Audio.FileName)
	require.Equal(t, 4, receive(t, updates).Message.Video.Width)
	doc := receive(t, updates).Message.Document
	require.Equal(t, "n.txt", doc.FileName)
	sticker := receive(t, updates).Message
	require.Equal(t, "😺", sticker.Sticker.Emoji)
	require.Empty(t, sticker.Caption, "a sticker has no caption")

	for _, tc := range []struct {
		id   string
		want []byte
	}{{largest.FileID, img.Bytes()}, {photo.Photo[0].FileID, []byte("fake thumbnail")}, {doc.FileID, []byte("hello")}} {
		f, err := b.GetFile(context.Background(), &bot.GetFileParams{FileID: tc.id})
		require.NoError(t, err)
		require.EqualValues(t, len(tc.want), f.FileSize)
		code, body := tb.get(t, "/file/bot"+tb.srv.Token()+"/"+f.FilePath)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, tc.want, body)
		// go-telegram/bot builds the same link.
		require.Equal(t, tb.srv.URL()+"/file/bot"+tb.srv.Token()+"/"+f.FilePath, b.FileDownloadLink(f))
	}
	require.Equal(t, 3, tb.srv.Downloads())
}

func TestFileErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, updates := tb.newBot(t)
	start(t, b)
	tb.srv.SendDocument(tb.alice, telegramtest.Media{Data: []byte("hello"), Name: "n.txt"})
	doc := receive(t, updates).Message.Document

	_, err := b.GetFile(context.Background(), &bot.GetFileParams{FileID: "nope"})
	require.ErrorIs(t, err, bot.ErrorBadRequest)
	require.ErrorContains(t, err, "invalid file_id")

	f, err := b.GetFile(context.Background(), &bot.GetFileParams{FileID: doc.FileID})
	require.NoError(t, err)
	code, _ := tb.get(t, "/file/bot"+tb.srv.Token()+"/documents/unknown.txt")
	require.Equal(t, http.StatusNotFound, code)
	code, _ = tb.get(t, "/file/bot999:wrong/"+f.FilePath)
	require.Equal(t, http.StatusUnauthorized, code)

	// Download faults queue like FailNext's; getFile fails with FailNext.
	tb.srv.FailNextDownload(telegramtest.ServerError())
	tb.srv.FailNextDownload(telegramtest.ServerError())
	tb.srv.FailDownloadAfter(1, telegramtest.Fault{Code: http.StatusBadGateway, Description: "Bad Gateway"})
	want := []int{500, 500, 200, 502, 200}
	for i, w := range want {
		code, _ := tb.get(t, "/file/bot"+tb.srv.Token()+"/"+f.FilePath)
		require.Equal(t, w, code, "download %d", i+1)
	}
	tb.srv.FailNext("getFile", telegramtest.ServerError())
	_, err = b.GetFile(context.Background(), &bot.GetFileParams{FileID: doc.FileID})
	require.Error(t, err)
	_, err = b.GetFile(context.Background(), &bot.GetFileParams{FileID: doc.FileID})
	require.NoError(t, err)

	// ServeFileWith replaces the body; getFile still gives the stored size.
	tb.srv.ServeFileWith(doc.FileID, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("something else, and longer"))
	})
	code, body := tb.get(t, "/file/bot"+tb.srv.Token()+"/"+f.FilePath)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "something else, and longer", string(body))
	f, err = b.GetFile(context.Background(), &bot.GetFileParams{FileID: doc.FileID})
	require.NoError(t, err)
	require.EqualValues(t, 5, f.FileSize)
}

func TestGetFileRefusesOver20MB(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, updates := tb.newBot(t)
	start(t, b)
	tb.srv.SendVideo(tb.alice, telegramtest.Media{Data: make([]byte, 20<<20+1), Name: "big.mp4"})
	video := receive(t, updates).Message.Video
	_, err := b.GetFile(context.Background(), &bot.GetFileParams{FileID: video.FileID})
	require.ErrorContains(t, err, "file is too big")
}
