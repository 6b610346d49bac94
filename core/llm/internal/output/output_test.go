package output_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/internal/ogg"
	"github.com/parleybot/parley/core/llm/internal/output"
)

func opusStream(t *testing.T) []byte {
	t.Helper()
	var out []byte
	for i, p := range []ogg.Page{
		{HeaderType: ogg.BOS, Packets: [][]byte{[]byte("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00")}},
		{Seq: 1, Packets: [][]byte{[]byte("OpusTags\x00\x00\x00\x00\x00\x00\x00\x00")}},
		{HeaderType: ogg.EOS, Seq: 2, Granule: 960, Packets: [][]byte{{0xf8, 0xff, 0xfe}}},
	} {
		b, err := p.Encode()
		require.NoError(t, err, i)
		out = append(out, b...)
	}
	return out
}

func TestSpeech(t *testing.T) {
	t.Parallel()
	stream := opusStream(t)
	for _, ct := range []string{"audio/ogg", "audio/opus", "audio/ogg; codecs=opus", "application/ogg", "application/octet-stream"} {
		got, err := output.Speech(bytes.NewReader(stream), ct, -1, 1<<20)
		require.NoError(t, err, ct)
		require.Equal(t, stream, got)
	}
	_, err := output.Speech(bytes.NewReader(stream), "application/json", -1, 1<<20)
	require.ErrorContains(t, err, `the answer is "application/json", not audio`)
	_, err = output.Speech(strings.NewReader("garbage, not audio at all"), "audio/ogg", -1, 1<<20)
	require.ErrorContains(t, err, "not Ogg Opus audio (25 bytes)")
	require.ErrorIs(t, err, output.ErrAnswer)
	_, err = output.Speech(bytes.NewReader(stream[:len(stream)-1]), "audio/ogg", -1, 1<<20)
	require.ErrorContains(t, err, "cut short")
	_, err = output.Speech(bytes.NewReader(stream), "audio/ogg", -1, int64(len(stream)-1))
	require.ErrorIs(t, err, output.ErrTooLarge)
	_, err = output.Speech(bytes.NewReader(stream), "audio/ogg", -1, int64(len(stream)))
	require.NoError(t, err, "exactly the cap")

	// A size the server announced is read into one buffer; a body longer
	// or shorter than announced is still read whole, and checked.
	for _, size := range []int64{int64(len(stream)), 10, int64(len(stream)) + 100} {
		got, err := output.Speech(bytes.NewReader(stream), "audio/ogg", size, 1<<20)
		require.NoError(t, err, "announced %d", size)
		require.Equal(t, stream, got)
	}
	_, err = output.Speech(bytes.NewReader(stream), "audio/ogg", 10, int64(len(stream)-1))
	require.ErrorIs(t, err, output.ErrTooLarge, "longer than announced and than the cap")
}

func pngBytes(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

func TestImage(t *testing.T) {
	t.Parallel()
	pic := pngBytes(t, 4, 3)
	b64 := base64.StdEncoding.EncodeToString(pic)
	data := func(b64 string) []openai.ImageResponseDataInner {
		return []openai.ImageResponseDataInner{{B64JSON: b64}}
	}
	got, mime, err := output.Image(data(b64), 1<<20)
	require.NoError(t, err)
	require.Equal(t, pic, got)
	require.Equal(t, "image/png", mime)

	_, _, err = output.Image(data(base64.StdEncoding.EncodeToString([]byte("garbage, no image"))), 1<<20)
	require.ErrorContains(t, err, "not an image (17 bytes)")
	_, _, err = output.Image(data(base64.StdEncoding.EncodeToString(pic[:len(pic)-20])), 1<<20)
	require.ErrorContains(t, err, "does not decode")
	_, _, err = output.Image(data("%%% not base64"), 1<<20)
	require.ErrorContains(t, err, "not base64")
	_, _, err = output.Image(data(b64), int64(len(pic)-1))
	require.ErrorIs(t, err, output.ErrTooLarge)
	_, _, err = output.Image(data(b64), int64(len(pic)))
	require.NoError(t, err, "exactly the cap")
	_, _, err = output.Image(nil, 1<<20)
	require.ErrorContains(t, err, "no b64_json image")
	require.ErrorIs(t, err, output.ErrAnswer)
}

type bodyDoer string

func (d bodyDoer) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader(string(d)))}, nil
}

func TestCapDoer(t *testing.T) {
	t.Parallel()
	read := func(ctx context.Context, body string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.com", nil)
		require.NoError(t, err)
		resp, err := output.CapDoer{Next: bodyDoer(body)}.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	got, err := read(context.Background(), "no cap at all")
	require.NoError(t, err)
	require.Equal(t, "no cap at all", got)
	ctx := output.WithCap(context.Background(), 5)
	got, err = read(ctx, "12345")
	require.NoError(t, err)
	require.Equal(t, "12345", got)
	_, err = read(ctx, "123456")
	require.ErrorIs(t, err, output.ErrTooLarge)
	require.ErrorIs(t, err, output.ErrAnswer)
}
