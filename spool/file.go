package spool

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/diskfault"
)

// A spool file is a sequence of records, each a 4-byte big-endian length,
// a 4-byte CRC-32 (Castagnoli) of the payload and the payload, a JSON
// core.InboundMessage. Records are appended and fsync'd one at a time; a
// crash mid-append leaves a torn last record, which opening cuts off.
// Beside it, NAME.offset holds how far the core has taken the records
// (8 bytes, big-endian), so a restart does not hand them over again; one
// handed over twice anyway (a crash between the two writes) is dropped
// by the store as a redelivery (its platform message id).

const headerLen = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// file is an open spool file and its offset file.
type file struct {
	path   string
	f      *os.File
	off    *os.File
	size   int64 // bytes in the file
	offset int64 // bytes already taken by the core
	unlock func()
	// disk is a test's injected full disk (nil in production).
	disk *diskfault.Disk
}

// openFile opens (creating it) the first spool file in dir that no other
// process holds: inbound.spool, then inbound-1.spool, … A file left by a
// process that died is taken over with what it holds.
func openFile(dir string) (*file, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the inbound spool directory %s: %w", dir, err)
	}
	for i := range 64 {
		name := "inbound.spool"
		if i > 0 {
			name = fmt.Sprintf("inbound-%d.spool", i)
		}
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("opening the inbound spool %s: %w", path, err)
		}
		unlock, held, err := lockFile(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking the inbound spool %s: %w", path, err)
		}
		if !held {
			f.Close()
			continue // another process's
		}
		sf, err := load(path, f, unlock)
		if err != nil {
			unlock()
			f.Close()
			return nil, err
		}
		return sf, nil
	}
	return nil, fmt.Errorf("every inbound spool file in %s is held by another process", dir)
}

// load reads the offset, checks the records after it and cuts a torn tail.
func load(path string, f *os.File, unlock func()) (*file, error) {
	off, err := os.OpenFile(path+".offset", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the inbound spool's offset %s.offset: %w", path, err)
	}
	sf := &file{path: path, f: f, off: off, unlock: unlock}
	var buf [8]byte
	if n, err := off.ReadAt(buf[:], 0); err == nil && n == 8 {
		sf.offset = int64(binary.BigEndian.Uint64(buf[:]))
	}
	st, err := f.Stat()
	if err != nil {
		off.Close()
		return nil, fmt.Errorf("reading the inbound spool %s: %w", path, err)
	}
	sf.size = st.Size()
	// The records are checked from the start: an offset that is not where
	// one begins (a damaged offset file) hands everything over again,
	// which the store takes once (platform message ids), rather than
	// cutting whole records off as torn.
	good, atBoundary := int64(0), sf.offset == 0
	for good < sf.size {
		_, next, err := sf.read(good)
		if err != nil {
			break
		}
		good = next
		atBoundary = atBoundary || good == sf.offset
	}
	if !atBoundary {
		sf.offset = 0
	}
	if good < sf.size {
		if err := f.Truncate(good); err != nil {
			off.Close()
			return nil, fmt.Errorf("cutting a torn record off the inbound spool %s: %w", path, err)
		}
		sf.size = good
	}
	return sf, nil
}

// errTorn is a record cut short or damaged.
var errTorn = errors.New("torn record")

// read returns the record at off and where the next one begins.
func (sf *file) read(off int64) (core.InboundMessage, int64, error) {
	var msg core.InboundMessage
	var h [headerLen]byte
	if _, err := sf.f.ReadAt(h[:], off); err != nil {
		return msg, 0, errTorn
	}
	n := int64(binary.BigEndian.Uint32(h[:4]))
	if off+headerLen+n > sf.size {
		return msg, 0, errTorn
	}
	payload := make([]byte, n)
	if _, err := sf.f.ReadAt(payload, off+headerLen); err != nil && !errors.Is(err, io.EOF) {
		return msg, 0, fmt.Errorf("reading the inbound spool %s: %w", sf.path, err)
	}
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(h[4:]) {
		return msg, 0, errTorn
	}
	if err := json.Unmarshal(payload, &msg); err != nil {
		return msg, 0, errTorn
	}
	return msg, off + headerLen + n, nil
}

// appendMsgs writes msgs at the end, in order, and syncs them: all of
// them or, when a write fails or the file would grow past max bytes,
// none (a conversation's messages must not be split between the file
// and memory).
func (sf *file) appendMsgs(msgs []core.InboundMessage, max int64) error {
	var recs []byte
	for _, msg := range msgs {
		payload, err := json.Marshal(msg)
		if err != nil {
			return fmt.Errorf("encoding a message for the inbound spool: %w", err)
		}
		var h [headerLen]byte
		binary.BigEndian.PutUint32(h[:4], uint32(len(payload)))
		binary.BigEndian.PutUint32(h[4:8], crc32.Checksum(payload, castagnoli))
		recs = append(append(recs, h[:]...), payload...)
	}
	if max > 0 && sf.size+int64(len(recs)) > max {
		return ErrFull
	}
	if err := sf.disk.Write("write", sf.path); err != nil {
		return fmt.Errorf("writing to the inbound spool %s: %w", sf.path, err)
	}
	if _, err := sf.f.WriteAt(recs, sf.size); err != nil {
		_ = sf.f.Truncate(sf.size) // no torn record left behind
		return fmt.Errorf("writing to the inbound spool %s: %w", sf.path, err)
	}
	if err := sf.f.Sync(); err != nil {
		_ = sf.f.Truncate(sf.size)
		return fmt.Errorf("syncing the inbound spool %s: %w", sf.path, err)
	}
	sf.size += int64(len(recs))
	return nil
}

// taken records that the core has the records before off.
func (sf *file) taken(off int64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(off))
	if err := sf.disk.Write("write", sf.path+".offset"); err != nil {
		return fmt.Errorf("writing the inbound spool's offset: %w", err)
	}
	if _, err := sf.off.WriteAt(buf[:], 0); err != nil {
		return fmt.Errorf("writing the inbound spool's offset: %w", err)
	}
	if err := sf.off.Sync(); err != nil {
		return fmt.Errorf("syncing the inbound spool's offset: %w", err)
	}
	sf.offset = off
	return nil
}

// reset empties the file once the core has taken everything.
func (sf *file) reset() error {
	if err := sf.taken(0); err != nil {
		return err
	}
	if err := sf.f.Truncate(0); err != nil {
		return fmt.Errorf("emptying the inbound spool %s: %w", sf.path, err)
	}
	sf.size = 0
	return sf.f.Sync()
}

// pending reports whether records wait for the core.
func (sf *file) pending() bool { return sf.offset < sf.size }

func (sf *file) close() error {
	sf.unlock()
	return errors.Join(sf.f.Close(), sf.off.Close())
}
