package ogg_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/internal/ogg"
)

// The CRC's check value: CRC-32/CKSUM of "123456789" is 0x765e7680 with
// its final xor of 0xffffffff, which Ogg's CRC does without.
func TestCRCCheckValue(t *testing.T) {
	t.Parallel()
	require.Equal(t, uint32(0x765e7680^0xffffffff), ogg.CRC([]byte("123456789")))
}

func TestEncodeParseRoundTrip(t *testing.T) {
	t.Parallel()
	long := bytes.Repeat([]byte{7}, 600) // three lacing values: 255, 255, 90
	head, err := ogg.Page{HeaderType: ogg.BOS, Serial: 9, Packets: [][]byte{[]byte("OpusHead....")}}.Encode()
	require.NoError(t, err)
	tags, err := ogg.Page{Serial: 9, Seq: 1, Packets: [][]byte{[]byte("OpusTags")}}.Encode()
	require.NoError(t, err)
	audio, err := ogg.Page{HeaderType: ogg.EOS, Granule: 1920, Serial: 9, Seq: 2, Packets: [][]byte{{1, 2, 3}, long, {}}}.Encode()
	require.NoError(t, err)
	stream := bytes.Join([][]byte{head, tags, audio}, nil)

	pages, err := ogg.Parse(stream)
	require.NoError(t, err)
	require.Len(t, pages, 3)
	require.Equal(t, ogg.Page{HeaderType: ogg.EOS, Granule: 1920, Serial: 9, Seq: 2, Packets: [][]byte{{1, 2, 3}, long, {}}}, pages[2])
	require.NoError(t, ogg.CheckOpus(stream))
}

func TestParseRefusesDamage(t *testing.T) {
	t.Parallel()
	page, err := ogg.Page{HeaderType: ogg.BOS, Packets: [][]byte{[]byte("OpusHead")}}.Encode()
	require.NoError(t, err)
	flipped := bytes.Clone(page)
	flipped[len(flipped)-1] ^= 1
	for name, b := range map[string][]byte{
		"empty":     nil,
		"not ogg":   []byte("ID3\x03 an mp3"),
		"json":      []byte(`{"error":{"message":"nope"}}`),
		"cut short": page[:len(page)-2],
		"bad crc":   flipped,
		"trailing":  append(bytes.Clone(page), 'x'),
	} {
		_, err := ogg.Parse(b)
		require.Error(t, err, name)
	}
}

func TestCheckOpusWantsOpusHeaders(t *testing.T) {
	t.Parallel()
	vorbis, err := ogg.Page{HeaderType: ogg.BOS, Packets: [][]byte{[]byte("\x01vorbis")}}.Encode()
	require.NoError(t, err)
	require.ErrorContains(t, ogg.CheckOpus(vorbis), "no OpusHead")
	head, err := ogg.Page{HeaderType: ogg.BOS, Packets: [][]byte{[]byte("OpusHead")}}.Encode()
	require.NoError(t, err)
	require.ErrorContains(t, ogg.CheckOpus(head), "no OpusTags")
}
