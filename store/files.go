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

// keepFiles stores m's files in tx when m waits to be sent; a message
// stored after its send (a notice) has nothing to keep.
func keepFiles(tx *gorm.DB, m *core.Message) error {
	if len(m.Files) == 0 || m.Delivery != core.DeliverySending {
		return nil
	}
	for i, f := range m.Files {
		if len(f.Data) > core.MaxOutboundFileBytes {
			return fmt.Errorf("keeping file %q of message %d: %d bytes, over the %d a file may have", f.Name, m.ID, len(f.Data), core.MaxOutboundFileBytes)
		}
		err := exec(tx, `INSERT INTO message_files (message_id, position, kind, name, mime, data) VALUES (?, ?, ?, ?, ?, ?)`,
			m.ID, i, string(f.Kind), f.Name, f.MIME, f.Data)
		if err != nil {
			return fmt.Errorf("keeping file %q of message %d: %w", f.Name, m.ID, err)
		}
	}
	return nil
}

// dropFiles lets go of the bytes of m's files once m is sent or dropped
// (a failed message keeps them: it may be sent again).
func dropFiles(tx *gorm.DB, m *core.Message) error {
	if m.Delivery != core.DeliverySent && m.Delivery != core.DeliveryDropped {
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
