// Package ogg reads and writes Ogg pages (RFC 3533) far enough to check
// that a text-to-speech answer is an Ogg Opus stream (RFC 7845), and for
// the fake server to make one.
package ogg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Header types of a page.
const (
	Continued = 0x01 // the first packet continues the previous page's last
	BOS       = 0x02 // the first page of a logical stream
	EOS       = 0x04 // the last page of a logical stream
)

// headerLen is the fixed part of a page header, before the segment table.
const headerLen = 27

// Page is one Ogg page.
type Page struct {
	HeaderType byte
	Granule    int64
	Serial     uint32
	Seq        uint32
	// Packets are the page's packets; the last one may continue on the
	// next page when its lacing ends in 255 (not made by Encode).
	Packets [][]byte
}

// Encode writes p with its CRC. Every packet must be shorter than 255*255
// bytes in all, the page's limit.
func (p Page) Encode() ([]byte, error) {
	var lacing []byte
	var body []byte
	for _, pk := range p.Packets {
		n := len(pk)
		for ; n >= 255; n -= 255 {
			lacing = append(lacing, 255)
		}
		lacing = append(lacing, byte(n))
		body = append(body, pk...)
	}
	if len(lacing) > 255 {
		return nil, fmt.Errorf("ogg: %d lacing values, over a page's 255", len(lacing))
	}
	b := make([]byte, headerLen, headerLen+len(lacing)+len(body))
	copy(b, "OggS")
	b[5] = p.HeaderType
	binary.LittleEndian.PutUint64(b[6:], uint64(p.Granule))
	binary.LittleEndian.PutUint32(b[14:], p.Serial)
	binary.LittleEndian.PutUint32(b[18:], p.Seq)
	b[26] = byte(len(lacing))
	b = append(append(b, lacing...), body...)
	binary.LittleEndian.PutUint32(b[22:], CRC(b))
	return b, nil
}

// Parse reads a whole stream of pages, checking each one's capture
// pattern, version and CRC, and that nothing follows the last.
func Parse(b []byte) ([]Page, error) {
	var pages []Page
	err := walk(b, func(i int) bool { return true }, func(p Page) { pages = append(pages, p) })
	return pages, err
}

// walk checks the pages of a whole stream as Parse does, handing keep's
// pages, with their packets, to each; the others are checked and let go,
// so a long stream is checked without holding its pages.
func walk(b []byte, keep func(i int) bool, each func(Page)) error {
	i := 0
	for ; len(b) > 0; i++ {
		p, n, err := parsePage(b, keep(i))
		if err != nil {
			return fmt.Errorf("ogg: page %d: %w", i, err)
		}
		each(p)
		b = b[n:]
	}
	if i == 0 {
		return errors.New("ogg: no page")
	}
	return nil
}

// parsePage reads the page at the start of b, with its packets when
// packets, and returns its length.
func parsePage(b []byte, packets bool) (Page, int, error) {
	if len(b) < headerLen || !bytes.Equal(b[:4], []byte("OggS")) {
		return Page{}, 0, errors.New(`does not start with "OggS"`)
	}
	if b[4] != 0 {
		return Page{}, 0, fmt.Errorf("version %d, not 0", b[4])
	}
	nseg := int(b[26])
	if len(b) < headerLen+nseg {
		return Page{}, 0, errors.New("segment table cut short")
	}
	lacing := b[headerLen : headerLen+nseg]
	size := 0
	for _, l := range lacing {
		size += int(l)
	}
	end := headerLen + nseg + size
	if len(b) < end {
		return Page{}, 0, fmt.Errorf("body cut short (%d of %d bytes)", len(b)-headerLen-nseg, size)
	}
	// The CRC is of the page with its CRC field zeroed, computed in place
	// (a copy of every page would double a voice note in memory).
	want := binary.LittleEndian.Uint32(b[22:])
	if got := crcUpdate(crcUpdate(crcUpdate(0, b[:22]), zeroCRC[:]), b[26:end]); got != want {
		return Page{}, 0, fmt.Errorf("CRC %08x, header says %08x", got, want)
	}
	p := Page{
		HeaderType: b[5],
		Granule:    int64(binary.LittleEndian.Uint64(b[6:])),
		Serial:     binary.LittleEndian.Uint32(b[14:]),
		Seq:        binary.LittleEndian.Uint32(b[18:]),
	}
	if !packets {
		return p, end, nil
	}
	body, start, n := b[headerLen+nseg:end], 0, 0
	for i, l := range lacing {
		n += int(l)
		if l < 255 || i == len(lacing)-1 {
			p.Packets = append(p.Packets, body[start:start+n])
			start, n = start+n, 0
		}
	}
	return p, end, nil
}

// CheckOpus checks that b is a whole Ogg stream (see Parse) whose first
// page begins a logical stream with an Opus identification header
// ("OpusHead", RFC 7845 section 5.1), followed by its comment header
// ("OpusTags").
func CheckOpus(b []byte) error {
	var pages []Page
	err := walk(b, func(i int) bool { return i < 2 }, func(p Page) {
		if len(pages) < 2 {
			pages = append(pages, p)
		}
	})
	if err != nil {
		return err
	}
	first := pages[0]
	if first.HeaderType&BOS == 0 || len(first.Packets) == 0 || !bytes.HasPrefix(first.Packets[0], []byte("OpusHead")) {
		return errors.New("ogg: the first page does not begin an Opus stream (no OpusHead)")
	}
	if len(pages) < 2 || len(pages[1].Packets) == 0 || !bytes.HasPrefix(pages[1].Packets[0], []byte("OpusTags")) {
		return errors.New("ogg: no OpusTags page after OpusHead")
	}
	return nil
}

// crcTable is the table of Ogg's CRC-32: polynomial 0x04c11db7, not
// reflected, initial value 0, no final xor.
var crcTable = func() (t [256]uint32) {
	for i := range t {
		r := uint32(i) << 24
		for range 8 {
			if r&0x80000000 != 0 {
				r = r<<1 ^ 0x04c11db7
			} else {
				r <<= 1
			}
		}
		t[i] = r
	}
	return t
}()

// CRC is the Ogg checksum of b (a page with its CRC field zeroed).
func CRC(b []byte) uint32 { return crcUpdate(0, b) }

// zeroCRC stands for a page's CRC field while its CRC is computed.
var zeroCRC [4]byte

// crcUpdate goes on with the checksum c over b.
func crcUpdate(c uint32, b []byte) uint32 {
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>24)^x]
	}
	return c
}
