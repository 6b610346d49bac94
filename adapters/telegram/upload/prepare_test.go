package upload

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))))
	return buf.Bytes()
}

func TestPrepareChoosesTheMethod(t *testing.T) {
	t.Parallel()
	small := pngOf(t, 30, 20)
	cases := []struct {
		name   string
		file   core.OutboundFile
		method string
	}{
		{"a picture is a photo", core.OutboundFile{Kind: core.AttachImage, Name: "a.png", Data: small}, photo},
		{"an unreadable picture is a document", core.OutboundFile{Kind: core.AttachImage, Name: "a.svg", Data: []byte("<svg/>")}, document},
		{"a picture too vast to decode is a document", core.OutboundFile{Kind: core.AttachImage, Name: "v.png", Data: vastPNG(t)}, document},
		{"a 1:30 strip is a document", core.OutboundFile{Kind: core.AttachImage, Name: "s.png", Data: pngOf(t, 3000, 100)}, document},
		{"an Ogg voice note is a voice note", core.OutboundFile{Kind: core.AttachVoice, Name: "v.ogg", Data: []byte("OggS..")}, voice},
		{"a voice note in another format is audio", core.OutboundFile{Kind: core.AttachVoice, Name: "v.mp3", MIME: "audio/mpeg", Data: []byte("ID3")}, audio},
		{"audio is audio", core.OutboundFile{Kind: core.AttachAudio, Name: "s.mp3", Data: []byte("ID3")}, audio},
		{"a video is a document", core.OutboundFile{Kind: core.AttachVideo, Name: "v.mp4", Data: []byte("mp4")}, document},
	}
	for _, c := range cases {
		it, err := prepare(c.file)
		require.NoError(t, err, c.name)
		require.Equal(t, c.method, it.method, c.name)
		require.Equal(t, c.file.Name, it.name, c.name)
		require.Equal(t, c.file.Data, it.data, c.name)
	}
}

func TestPrepareScalesAPictureTooLargeInPixels(t *testing.T) {
	t.Parallel()
	it, err := prepare(core.OutboundFile{Kind: core.AttachImage, Name: "wide.png", Data: pngOf(t, 9600, 480)})
	require.NoError(t, err)
	require.Equal(t, photo, it.method)
	require.Equal(t, "wide.jpg", it.name)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(it.data))
	require.NoError(t, err)
	require.Equal(t, "jpeg", format)
	require.Equal(t, 2560, cfg.Width)
	require.Equal(t, 128, cfg.Height, "the ratio is kept")
}

func TestPrepareRefuses(t *testing.T) {
	t.Parallel()
	_, err := prepare(core.OutboundFile{Kind: core.AttachAudio, Name: "long.mp3", Data: make([]byte, MaxFile+1)})
	var perm *core.PermanentError
	require.ErrorAs(t, err, &perm)
	require.Equal(t, `file "long.mp3" is 50.0 MB, over Telegram's 50.0 MB limit for a bot's upload`, perm.Reason)
	_, err = prepare(core.OutboundFile{Kind: core.AttachDocument, Name: "empty.txt"})
	require.ErrorAs(t, err, &perm)
	require.Contains(t, perm.Reason, `"empty.txt" is empty`)
}

// vastPNG is a small file claiming 12000×12000 pixels: only its header is
// real, which is all DecodeConfig reads.
func vastPNG(t *testing.T) []byte {
	t.Helper()
	data := pngOf(t, 1, 1)
	// The IHDR chunk's width and height follow the 8-byte signature and
	// the chunk's length and type.
	copy(data[16:24], []byte{0, 0, 0x2e, 0xe0, 0, 0, 0x2e, 0xe0})
	// The chunk's CRC covers its type and data.
	binary.BigEndian.PutUint32(data[29:33], crc32.ChecksumIEEE(data[12:29]))
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, 12000, cfg.Width)
	return data
}
