package upload

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// oggPage is one Ogg page holding packet (under 255*255 bytes), with its
// CRC, as an encoder writes it.
func oggPage(seq uint32, granule int64, flags byte, packet []byte) []byte {
	h := make([]byte, pageHeader, pageHeader+len(packet)/255+1)
	copy(h, "OggS")
	h[5] = flags
	binary.LittleEndian.PutUint64(h[6:], uint64(granule))
	binary.LittleEndian.PutUint32(h[14:], 1234)
	binary.LittleEndian.PutUint32(h[18:], seq)
	n := len(packet)
	for ; n >= 255; n -= 255 {
		h = append(h, 255)
	}
	h = append(h, byte(n))
	h[26] = byte(len(h) - pageHeader)
	page := append(h, packet...)
	binary.LittleEndian.PutUint32(page[22:], oggCRC(page))
	return page
}

// oggCRC is Ogg's CRC-32 (polynomial 0x04c11db7, not reflected, from 0).
func oggCRC(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc ^= uint32(c) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04c11db7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// oggOpus is an Ogg Opus file of the given length at 48 kHz with a
// pre-skip of 312 samples; its audio packets hold audio (which may
// contain "OggS").
func oggOpus(seconds float64, audio []byte) []byte {
	head := []byte("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00")
	tags := []byte("OpusTags\x06\x00\x00\x00parley\x00\x00\x00\x00")
	end := int64(seconds*opusRate) + 312
	var out bytes.Buffer
	out.Write(oggPage(0, 0, 2, head))
	out.Write(oggPage(1, 0, 0, tags))
	out.Write(oggPage(2, end/2, 0, audio))
	out.Write(oggPage(3, end, 4, audio))
	return out.Bytes()
}

func TestReadVoiceReadsTheLengthOfOggOpus(t *testing.T) {
	t.Parallel()
	v, ok := readVoice(oggOpus(2.5, bytes.Repeat([]byte{0xfc, 0xff, 0xfe}, 40)))
	require.True(t, ok)
	require.InDelta(t, 2.5, v.seconds, 1e-9, "granule less pre-skip, at 48 kHz")
	wave, err := base64.StdEncoding.DecodeString(v.waveform)
	require.NoError(t, err)
	require.Len(t, wave, 25, "ten samples a second")
	require.Equal(t, bytes.Repeat([]byte{128}, 25), wave, "flat")

	v, ok = readVoice(oggOpus(60, []byte("xxOggS\x00yy")))
	require.True(t, ok, "OggS inside the audio is not a page")
	require.InDelta(t, 60, v.seconds, 1e-9)
	wave, _ = base64.StdEncoding.DecodeString(v.waveform)
	require.Len(t, wave, 256, "at most 256 samples")
}

func TestReadVoiceRefusesWhatIsNotOggOpus(t *testing.T) {
	t.Parallel()
	good := oggOpus(1, []byte{1, 2, 3})
	for name, data := range map[string][]byte{
		"empty":        nil,
		"not ogg":      []byte("ID3\x03 an mp3, say"),
		"truncated":    good[:len(good)-2],
		"vorbis":       oggPage(0, 0, 2, []byte("\x01vorbis and more bytes here")),
		"no audio":     good[:len(oggPage(0, 0, 2, []byte("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00")))],
		"short header": oggPage(0, 0, 2, []byte("OpusHead")),
	} {
		_, ok := readVoice(data)
		require.False(t, ok, name)
	}
}

// TestVoiceFixture keeps ../testdata/voice.ogg (2.5 s, for the adapter's
// tests) what oggOpus makes.
func TestVoiceFixture(t *testing.T) {
	t.Parallel()
	want := oggOpus(2.5, bytes.Repeat([]byte{0xfc, 0xff, 0xfe}, 40))
	if os.Getenv("UPDATE_FIXTURES") != "" {
		require.NoError(t, os.WriteFile("../testdata/voice.ogg", want, 0o644))
	}
	got, err := os.ReadFile("../testdata/voice.ogg")
	require.NoError(t, err)
	require.Equal(t, want, got)
}
