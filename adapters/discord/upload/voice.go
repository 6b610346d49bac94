package upload

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
)

// voice is what Discord requires of a voice message's attachment.
type voice struct {
	seconds  float64
	waveform string // base64 of up to 256 samples, 0–255
}

// opusRate is the rate an Ogg Opus granule position counts at, whatever
// the audio's own rate.
const opusRate = 48000

// readVoice reads an Ogg Opus file's length: the granule position of its
// last page, less the pre-skip of its OpusHead, at 48 kHz. The waveform
// is flat: drawing the real one would mean decoding the Opus audio, and
// Discord only draws it.
func readVoice(data []byte) (voice, bool) {
	head, ok := firstPacket(data)
	if !ok || len(head) < 19 || !bytes.HasPrefix(head, []byte("OpusHead")) {
		return voice{}, false
	}
	preSkip := int64(binary.LittleEndian.Uint16(head[10:12]))
	granule, ok := lastGranule(data)
	if !ok || granule <= preSkip {
		return voice{}, false
	}
	secs := float64(granule-preSkip) / opusRate
	// About ten samples a second, as Discord's own clients record, at
	// most 256; mid-height, so it reads as sound, not silence.
	n := min(max(int(secs*10), 1), 256)
	return voice{seconds: secs, waveform: base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{128}, n))}, true
}

// Ogg page header: "OggS", version 0, header type, granule position
// (int64 LE at 6), serial, sequence, CRC, segment count (at 26), then the
// segment table.
const pageHeader = 27

// firstPacket is the payload of the first page, if the data starts with
// one (OpusHead is alone on its page).
func firstPacket(data []byte) ([]byte, bool) {
	size, ok := pageSize(data, 0)
	if !ok {
		return nil, false
	}
	return data[pageHeader+int(data[26]) : size], true
}

// pageSize is the length of the page at off, if a whole one is there.
func pageSize(data []byte, off int) (int, bool) {
	p := data[off:]
	if len(p) < pageHeader || string(p[:4]) != "OggS" || p[4] != 0 {
		return 0, false
	}
	n := pageHeader + int(p[26])
	if len(p) < n {
		return 0, false
	}
	for _, seg := range p[pageHeader:n] {
		n += int(seg)
	}
	return n, len(p) >= n
}

// lastGranule is the granule position of the last page: found from the
// end, a candidate counting only when it is a whole page ending where
// the data ends (so "OggS" inside audio is not taken for a page).
func lastGranule(data []byte) (int64, bool) {
	for end := len(data); end > 0; {
		i := bytes.LastIndex(data[:end], []byte("OggS"))
		if i < 0 {
			return 0, false
		}
		if size, ok := pageSize(data, i); ok && i+size == len(data) {
			g := int64(binary.LittleEndian.Uint64(data[i+6 : i+14]))
			return g, g >= 0
		}
		end = i
	}
	return 0, false
}
