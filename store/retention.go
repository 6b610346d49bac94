package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// RetentionBatch is how many messages DeleteMessagesBefore deletes in a
// call given no limit, and maxRetentionBatch the most it deletes in one:
// each call is one write transaction, and SQLite has one writer.
const (
	RetentionBatch    = 500
	maxRetentionBatch = 5000
)

// DeleteMessagesBefore deletes up to limit (RetentionBatch when <= 0, at
// most 5,000) of the oldest messages created before before, of the view's
// bot (every bot's on AllBots), in one short transaction, and returns how
// many it deleted: the caller loops until fewer than asked come back
// (retention.messages). Their search entries go with them; so do, by
// their foreign keys, their kept files, answered questions and the rows
// plugins keep of a message (its embedding). Session records with their
// summaries, and what plugins keep of a conversation (facts), stay. Runs
// name their trigger message by id without a foreign key: a run that
// old is long finished, and nothing reads the message through it.
func (s *MessageLog) DeleteMessagesBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	if limit <= 0 {
		limit = RetentionBatch
	}
	limit = min(limit, maxRetentionBatch)
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		n = 0 // a batch may run this again after a rollback
		q, args := s.oldMessages(before, limit)
		if !s.q.sqlite {
			res := tx.Exec(q, args...)
			n = res.RowsAffected
			return res.Error
		}
		var err error
		n, err = deleteOldSQLite(tx, q, args)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("deleting messages before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	return n, nil
}

// oldMessages is the query of DeleteMessagesBefore: on SQLite the ids and
// conversations of the messages to delete (their search entries are
// keyed by both), on PostgreSQL the delete itself. Both walk
// messages_created from the oldest, the bot's conversation read by
// primary key for each (so another bot's old messages are walked past,
// not sorted); on PostgreSQL rows another retention pass holds are
// skipped, not waited for.
func (s *dbs) oldMessages(before time.Time, limit int) (string, []any) {
	from := `messages m`
	cond, botArgs := s.botCond(`c.bot_id`)
	if s.bot != "" {
		// CROSS JOIN keeps SQLite's planner walking messages first, in
		// created_at order, whatever it guesses of the bot's share.
		from += ` CROSS JOIN conversations c`
		cond = ` AND c.id = m.conversation_id` + cond
	}
	sel := `SELECT m.id, m.conversation_id FROM ` + from + ` WHERE m.created_at < ?` + cond + ` ORDER BY m.created_at LIMIT ?`
	args := append(append([]any{s.q.t(before)}, botArgs...), limit)
	if s.q.sqlite {
		return sel, args
	}
	sel = `SELECT m.id FROM ` + from + ` WHERE m.created_at < ?` + cond + ` ORDER BY m.created_at LIMIT ? FOR UPDATE OF m SKIP LOCKED`
	// ARRAY(...) picks the rows once, ahead of the delete, which then
	// finds them by primary key: as IN (...) the planner may hash the
	// picked ids against a scan of every message.
	return `DELETE FROM messages WHERE id = ANY (ARRAY(` + sel + `))`, args
}

// deleteOldSQLite deletes the messages q picks, with their search entries,
// and returns how many went.
func deleteOldSQLite(tx *gorm.DB, q string, args []any) (int64, error) {
	type ref struct{ id, conv int64 }
	refs, err := queryAll(tx, q, args, func(r *ref) []any { return []any{&r.id, &r.conv} })
	if err != nil || len(refs) == 0 {
		return 0, err
	}
	ids := make([]int64, 0, len(refs))
	docs := make([]int64, 0, len(refs))
	for _, r := range refs {
		ids = append(ids, r.id)
		if d, ok := allDocID(r.conv, r.id); ok {
			docs = append(docs, d)
		}
	}
	// A message not indexed yet has no entry: deleting none is harmless.
	if err := tx.Exec(`DELETE FROM message_search WHERE docid IN ?`, ids).Error; err != nil {
		return 0, fmt.Errorf("deleting search entries: %w", err)
	}
	if len(docs) > 0 {
		if err := tx.Exec(`DELETE FROM message_search_all WHERE docid IN ?`, docs).Error; err != nil {
			return 0, fmt.Errorf("deleting search entries: %w", err)
		}
	}
	res := tx.Exec(`DELETE FROM messages WHERE id IN ?`, ids)
	if res.Error != nil {
		return 0, fmt.Errorf("deleting messages: %w", res.Error)
	}
	return res.RowsAffected, rewindSearch(tx)
}
