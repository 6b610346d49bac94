package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// MessageLog is a conversation's messages: appending them, reading the
// newest ones, and settling the delivery of replies (delivery.go).
type MessageLog struct{ *dbs }

const insertMessageSQL = `INSERT INTO messages
		(conversation_id, seq, role, content, source, platform_message_id, session_record_id, run_id, metadata, created_at, delivery)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`

// insertMessagePG also writes the search tokens (see search.go).
const insertMessagePG = `INSERT INTO messages
		(conversation_id, seq, role, content, source, platform_message_id, session_record_id, run_id, metadata, created_at, delivery, search)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, to_tsvector('simple', ?)) RETURNING id`

// insertMessage inserts m (whose Seq is already assigned) and sets its ID;
// on PostgreSQL it writes its search tokens too. meta is m.Metadata encoded, createdAt
// m.CreatedAt bound.
func (s *dbs) insertMessage(tx *gorm.DB, m *core.Message, meta string, createdAt any) error {
	if !s.q.sqlite {
		// PostgreSQL's text takes neither NUL nor invalid UTF-8; a model's
		// reply may hold either, and must still be kept.
		m.Content = strings.ToValidUTF8(strings.ReplaceAll(m.Content, "\x00", "\uFFFD"), "\uFFFD")
	}
	args := []any{m.ConversationID, m.Seq, string(m.Role), m.Content, string(m.Source),
		m.PlatformMessageID, nid(m.SessionRecordID), nid(m.RunID), meta, createdAt, string(m.Delivery)}
	q := insertMessageSQL
	if !s.q.sqlite {
		q = insertMessagePG
		tokens := ""
		if indexed(m) {
			tokens = strings.Join(searchTokens(m.Content), " ")
		}
		args = append(args, tokens)
	}
	if err := row(tx, q, args...).Scan(&m.ID); err != nil {
		return fmt.Errorf("inserting message: %w", err)
	}
	return s.keepFiles(tx, m)
}

// reserveSeqs bumps the conversation's last_seq by n, notes the time of
// its newest message and returns the first of the n seqs reserved and the
// conversation's current session record. The row lock it takes serialises
// appenders of one conversation on PostgreSQL; SQLite has one writer anyway.
func reserveSeqs(tx *gorm.DB, conversationID int64, n int, at any) (int64, *int64, error) {
	var last int64
	var record *int64
	err := row(tx, `UPDATE conversations SET last_seq = last_seq + ?, last_message_at = ?, updated_at = ? WHERE id = ?
		RETURNING last_seq, current_record_id`, n, at, at, conversationID).Scan(&last, nullIDCol{&record})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, fmt.Errorf("conversation %d: %w", conversationID, core.ErrNotFound)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("assigning seq: %w", err)
	}
	return last - int64(n) + 1, record, nil
}

// AppendMessage appends m to its conversation with the next seq and sets
// m.ID and m.Seq (and m.CreatedAt from the store's clock when zero, and
// SessionRecordID to the conversation's current record when nil). It
// returns core.ErrNotFound if the conversation does not exist.
func (s *MessageLog) AppendMessage(ctx context.Context, m *core.Message) error {
	meta, err := encodeMetadata(m.Metadata)
	if err != nil {
		return fmt.Errorf("appending message: %w", err)
	}
	msg := *m
	if msg.CreatedAt.IsZero() {
		msg.CreatedAt = s.now()
	}
	msg.CreatedAt = utc(msg.CreatedAt)
	created := s.q.t(msg.CreatedAt)
	err = s.write(ctx, func(tx *gorm.DB) error {
		seq, record, err := reserveSeqs(tx, msg.ConversationID, 1, created)
		if err != nil {
			return err
		}
		msg.Seq = seq
		if msg.SessionRecordID == nil {
			msg.SessionRecordID = record
		}
		return s.insertMessage(tx, &msg, meta, created)
	})
	if err != nil {
		return fmt.Errorf("appending message: %w", err)
	}
	*m = msg
	return nil
}

// recentMessageCols leaves out what RecentMessages already knows (the
// conversation) and turns empty metadata into NULL: every column not read is
// a conversion and an allocation saved, fifty times a turn.
const recentMessageCols = `id, seq, role, content, source, platform_message_id, session_record_id, run_id,
	NULLIF(metadata, '{}'), delivery, created_at`

func recentMessageDest(m *core.Message) []any {
	return []any{&m.ID, &m.Seq, strCol[core.Role]{&m.Role}, &m.Content, strCol[core.Source]{&m.Source},
		&m.PlatformMessageID, nullIDCol{&m.SessionRecordID}, nullIDCol{&m.RunID}, metadataCol{&m.Metadata},
		strCol[core.Delivery]{&m.Delivery}, timeCol{&m.CreatedAt}}
}

// RecentMessages returns up to limit of the conversation's newest messages,
// oldest first. It walks messages_conversation_seq backwards.
func (s *MessageLog) RecentMessages(ctx context.Context, conversationID int64, limit int) ([]core.Message, error) {
	return s.MessagesAfter(ctx, conversationID, 0, limit)
}

// MessagesAfter returns up to limit of the conversation's newest messages
// with a seq above afterSeq, oldest first, walking
// messages_conversation_seq backwards.
func (s *MessageLog) MessagesAfter(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := readAllCap(ctx, s.r, s.q.messagesAfter, []any{conversationID, afterSeq, limit}, recentMessageDest, min(limit, 256))
	if err != nil {
		return nil, fmt.Errorf("reading recent messages of conversation %d: %w", conversationID, err)
	}
	for i, j := 0, len(out)-1; i <= j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
		out[i].ConversationID, out[j].ConversationID = conversationID, conversationID
	}
	return out, nil
}

// Messages returns all of a conversation's messages by seq.
func (s *MessageLog) Messages(ctx context.Context, conversationID int64) ([]core.Message, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? ORDER BY seq`, []any{conversationID}, messageDest)
	if err != nil {
		return nil, fmt.Errorf("reading messages of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// SetMessageText replaces a stored message's content and metadata and its
// search entry: a voice note's transcript becomes its text once it is
// known. Only the message's own row changes; its seq and time stay.
func (s *MessageLog) SetMessageText(ctx context.Context, m core.Message) error {
	meta, err := encodeMetadata(m.Metadata)
	if err != nil {
		return fmt.Errorf("setting message text: %w", err)
	}
	if !s.q.sqlite {
		m.Content = strings.ToValidUTF8(strings.ReplaceAll(m.Content, "\x00", "\uFFFD"), "\uFFFD")
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		if !s.q.sqlite {
			tokens := ""
			if indexed(&m) {
				tokens = strings.Join(searchTokens(m.Content), " ")
			}
			return tx.Exec(`UPDATE messages SET content = ?, metadata = ?, search = to_tsvector('simple', ?) WHERE id = ?`,
				m.Content, meta, tokens, m.ID).Error
		}
		// The conversation, as stored, keys the message's search entries.
		err := tx.Raw(`UPDATE messages SET content = ?, metadata = ? WHERE id = ? RETURNING conversation_id`,
			m.Content, meta, m.ID).Row().Scan(&m.ConversationID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // no such message: nothing to index
		}
		if err != nil {
			return err
		}
		// Only a message IndexPending has passed is indexed here; a newer
		// one it indexes itself, with its new text.
		var done bool
		if err := tx.Raw(`SELECT ? <= last_message_id FROM search_progress WHERE id = 1`, m.ID).Row().Scan(&done); err != nil || !done {
			return err
		}
		if err := unindexMessage(tx, m.ConversationID, m.ID); err != nil {
			return err
		}
		return s.indexMessage(tx, &m)
	})
	if err != nil {
		return fmt.Errorf("setting the text of message %d: %w", m.ID, err)
	}
	return nil
}

// MessagesBetween returns the conversation's messages with from < seq <=
// to, by seq, at most limit (the newest of them).
func (s *MessageLog) MessagesBetween(ctx context.Context, conversationID, from, to int64, limit int) ([]core.Message, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? AND seq > ? AND seq <= ? ORDER BY seq DESC LIMIT ?`, []any{conversationID, from, to, limit}, messageDest)
	if err != nil {
		return nil, fmt.Errorf("reading messages of conversation %d: %w", conversationID, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// MessageByPlatformID returns the conversation's message of role with
// that platform id (core.ErrNotFound if none): the message a user's edit,
// deletion or reaction is about.
func (s *MessageLog) MessageByPlatformID(ctx context.Context, conversationID int64, platformMessageID string, role core.Role) (core.Message, error) {
	var m core.Message
	err := s.r.WithContext(ctx).Raw(`SELECT `+messageCols+` FROM messages
		WHERE conversation_id = ? AND platform_message_id = ? AND role = ? AND platform_message_id <> '' ORDER BY id LIMIT 1`,
		conversationID, platformMessageID, string(role)).Row().Scan(messageDest(&m)...)
	if err != nil {
		return core.Message{}, notFound(fmt.Sprintf("message %s of conversation %d", platformMessageID, conversationID), err)
	}
	return m, nil
}
