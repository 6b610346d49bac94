package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// The bytes of a bot message's files (core.Message.Files) are kept in
// message_files from when the message is stored as sending until its
// delivery settles: a send retried after a crash (PendingDeliveries) has
// the same files. Once the message is sent, or dropped, they go; the
// message's metadata keeps their description.

// DefaultKeptFileBytes is how many bytes of outbound files are kept at
// most (Options.KeptFileBytes): ten of the largest files a platform takes.
const DefaultKeptFileBytes = 10 * core.MaxOutboundFileBytes

// keepFiles stores m's files in tx when m waits to be sent; a message
// stored after its send (a notice) has nothing to keep. Files that would
// take message_files past s.keptFileBytes (a file over
// core.MaxOutboundFileBytes always would) are not kept: m is marked
// core.FilesNotKeptKey, and sent all the same.
func (s *dbs) keepFiles(tx *gorm.DB, m *core.Message) error {
	if len(m.Files) == 0 || m.Delivery != core.DeliverySending {
		return nil
	}
	fits, err := s.filesFit(tx, m.Files)
	if err != nil {
		return fmt.Errorf("keeping the files of message %d: %w", m.ID, err)
	}
	if !fits {
		return markFilesNotKept(tx, m)
	}
	for i, f := range m.Files {
		err := exec(tx, `INSERT INTO message_files (message_id, position, kind, name, mime, data) VALUES (?, ?, ?, ?, ?, ?)`,
			m.ID, i, string(f.Kind), f.Name, f.MIME, f.Data)
		if err != nil {
			return fmt.Errorf("keeping file %q of message %d: %w", f.Name, m.ID, err)
		}
	}
	return nil
}

// filesFit reports whether files may be kept beside those kept now.
func (s *dbs) filesFit(tx *gorm.DB, files []core.OutboundFile) (bool, error) {
	var size int64
	for _, f := range files {
		if len(f.Data) > core.MaxOutboundFileBytes {
			return false, nil
		}
		size += int64(len(f.Data))
	}
	if s.keptFileBytes < 0 || size > s.keptFileBytes {
		return false, nil
	}
	// The table holds only sends in flight: summing it is cheap.
	var kept int64
	if err := row(tx, `SELECT COALESCE(SUM(LENGTH(data)), 0) FROM message_files`).Scan(&kept); err != nil {
		return false, fmt.Errorf("measuring the files kept: %w", err)
	}
	return kept+size <= s.keptFileBytes, nil
}

// markFilesNotKept records in m's metadata that its files were not kept.
func markFilesNotKept(tx *gorm.DB, m *core.Message) error {
	m.Metadata[core.FilesNotKeptKey] = true
	enc, err := encodeMetadata(m.Metadata)
	if err != nil {
		return fmt.Errorf("marking the files of message %d not kept: %w", m.ID, err)
	}
	if err := exec(tx, `UPDATE messages SET metadata = ? WHERE id = ?`, enc, m.ID); err != nil {
		return fmt.Errorf("marking the files of message %d not kept: %w", m.ID, err)
	}
	return nil
}

// dropFiles lets go of the bytes of m's files once its delivery settles:
// sent, dropped or failed (nothing sends a failed message again).
func dropFiles(tx *gorm.DB, m *core.Message) error {
	if m.Delivery == core.DeliverySending || m.Delivery == core.DeliveryNone {
		return nil
	}
	if err := exec(tx, `DELETE FROM message_files WHERE message_id = ?`, m.ID); err != nil {
		return fmt.Errorf("dropping the files of message %d: %w", m.ID, err)
	}
	return nil
}

// MessageFiles returns the files message id still keeps, in order (none
// once it was sent).
func (s *MessageLog) MessageFiles(ctx context.Context, id int64) ([]core.OutboundFile, error) {
	files, err := queryAll(s.r.WithContext(ctx), `SELECT kind, name, mime, data FROM message_files WHERE message_id = ? ORDER BY position`,
		[]any{id}, func(f *core.OutboundFile) []any { return []any{(*string)(&f.Kind), &f.Name, &f.MIME, &f.Data} })
	if err != nil {
		return nil, fmt.Errorf("reading the files of message %d: %w", id, err)
	}
	return files, nil
}

// withFiles fills in the kept files of msgs that describe some.
func (s *MessageLog) withFiles(ctx context.Context, msgs []core.Message) error {
	for i := range msgs {
		if msgs[i].Metadata[core.FilesKey] == nil {
			continue
		}
		files, err := s.MessageFiles(ctx, msgs[i].ID)
		if err != nil {
			return err
		}
		msgs[i].Files = files
	}
	return nil
}
