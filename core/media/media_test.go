package media_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/media"
	"github.com/parleybot/parley/core/media/mediatest"
)

// photo is a w×h JPEG gradient.
func photo(_ testing.TB, w, h int) []byte { return mediatest.Photo(w, h, 90, false) }

func TestImageIsScaledToTheLongestSide(t *testing.T) {
	t.Parallel()
	p, err := media.Image(photo(t, 3000, 2000), 1568)
	require.NoError(t, err)
	require.Equal(t, "image/jpeg", p.MIME)
	require.Equal(t, [2]int{1568, 1045}, [2]int{p.Width, p.Height})
	got, err := jpeg.Decode(bytes.NewReader(p.Data))
	require.NoError(t, err)
	require.Equal(t, image.Rect(0, 0, 1568, 1045), got.Bounds())

	url := p.DataURL()
	require.True(t, strings.HasPrefix(url, "data:image/jpeg;base64,"))
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(url, "data:image/jpeg;base64,"))
	require.NoError(t, err)
	require.Equal(t, p.Data, raw)

	small, err := media.Image(photo(t, 300, 200), 1568)
	require.NoError(t, err)
	require.Equal(t, [2]int{300, 200}, [2]int{small.Width, small.Height}, "a small image keeps its size")
}

func TestTransparentImageStaysPNG(t *testing.T) {
	t.Parallel()
	img := image.NewNRGBA(image.Rect(0, 0, 40, 20))
	img.Set(1, 1, color.NRGBA{R: 255, A: 128})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	p, err := media.Image(b.Bytes(), 1568)
	require.NoError(t, err)
	require.Equal(t, "image/png", p.MIME)
	_, err = png.Decode(bytes.NewReader(p.Data))
	require.NoError(t, err)
}

func TestNotAnImage(t *testing.T) {
	t.Parallel()
	for name, data := range map[string][]byte{
		"text":          []byte("this is not a picture"),
		"cut JPEG":      photo(t, 64, 64)[:200],
		"empty":         nil,
		"declared huge": hugePNGHeader(),
	} {
		_, err := media.Image(data, 1568)
		require.Error(t, err, name)
	}
	_, err := media.Image([]byte("this is not a picture"), 1568)
	require.ErrorIs(t, err, media.ErrNotImage)
}

// hugePNGHeader is a PNG that declares 100,000×100,000 pixels.
func hugePNGHeader() []byte {
	var b bytes.Buffer
	img := image.NewGray(image.Rect(0, 0, 1, 1))
	_ = png.Encode(&b, img)
	data := b.Bytes()
	// IHDR's width and height follow the 8-byte signature and the chunk's
	// length and type; the CRC is not checked by DecodeConfig.
	copy(data[16:24], []byte{0, 1, 0x86, 0xa0, 0, 1, 0x86, 0xa0})
	return data
}

func TestDocumentText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mime string
		data       string
		want       string
	}{
		{"notes.txt", "text/plain", "Shopping list:\r\n- flour\r\n", "Shopping list:\n- flour"},
		{"data.json", "application/octet-stream", `{"a": 1}`, `{"a": 1}`},
		{"main.go", "", "package main\n", "package main"},
		{"README", "", "\xef\xbb\xbfplain words with a BOM", "plain words with a BOM"},
		{"report.pdf", "application/pdf", string(mediatest.PDF("Hello from a PDF")), "Hello from a PDF"},
	} {
		got, cut, err := media.DocumentText(tc.name, tc.mime, []byte(tc.data), 1000)
		require.NoError(t, err, tc.name)
		require.False(t, cut)
		require.Equal(t, tc.want, got, tc.name)
	}
	long := strings.Repeat("é", 50)
	got, cut, err := media.DocumentText("long.txt", "text/plain", []byte(long), 10)
	require.NoError(t, err)
	require.True(t, cut)
	require.Equal(t, strings.Repeat("é", 10), got)

	for name, data := range map[string][]byte{
		"binary.txt":  []byte("MZ\x00\x00\x01binary pretending to be text"),
		"sheet.xlsx":  []byte("PK\x03\x04\x14\x00\x06\x00"),
		"empty.txt":   []byte("   \n"),
		"broken.pdf":  []byte("%PDF-1.4\nthis is not really a pdf"),
		"picture.png": photo(t, 8, 8),
	} {
		_, _, err := media.DocumentText(name, "", data, 1000)
		require.Error(t, err, name)
	}
}

func BenchmarkImage4MB(b *testing.B) {
	data := mediatest.Photo(4000, 3000, 95, true)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := media.Image(data, 1568); err != nil {
			b.Fatal(err)
		}
	}
}
