package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// DeleteConversation deletes a conversation with its jobs, messages, runs,
// session records and the rows of plugins' tables that refer to it (their
// foreign keys cascade), in one transaction. While an enabled
// recurring job (agent_turn, pending or sending) is bound to it and confirm
// is false, nothing is deleted: it returns the conversation's recurring
// jobs, enabled or not, in Deletion.Automations and an error wrapping
// core.ErrBlockedByAutomations. Cancelled or failed recurring jobs and
// one-shot jobs never block; they go with the conversation. An unknown id
// is core.ErrNotFound.
func (s *Directory) DeleteConversation(ctx context.Context, id int64, confirm bool) (core.Deletion, error) {
	var (
		d     core.Deletion
		found bool
	)
	err := s.write(ctx, func(tx *gorm.DB) error {
		d, found = core.Deletion{}, false // a batch may run this again after a rollback
		// On PostgreSQL the row lock makes a concurrent job insert (its
		// foreign key check takes a share lock on this row) wait for us
		// and then fail, instead of landing between the check and the
		// delete. SQLite's immediate transaction already excludes writers.
		lock := `SELECT id FROM conversations WHERE id = ?`
		if !s.q.sqlite {
			lock += ` FOR UPDATE`
		}
		var got int64
		switch err := tx.Raw(lock, id).Row().Scan(&got); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return fmt.Errorf("locking the conversation: %w", err)
		}
		found = true
		autos, err := s.automations(tx, id)
		if err != nil {
			return err
		}
		if !confirm && anyEnabled(autos) {
			// Not an error to the batch: nothing was written, so the
			// writes sharing its transaction need not run again.
			d.Automations = autos
			return nil
		}
		// Jobs go first and on their own so the count is theirs; the
		// cascade would take them anyway.
		res := tx.Exec(`DELETE FROM jobs WHERE conversation_id = ?`, id)
		if res.Error != nil {
			return fmt.Errorf("deleting jobs: %w", res.Error)
		}
		d.Jobs = int(res.RowsAffected)
		if s.q.sqlite {
			if err := unindex(tx, id); err != nil {
				return err
			}
		}
		// Messages, runs and session records cascade, and so do the rows
		// of plugins' tables (the memory plugin's facts, the mood plugin's
		// points: ON DELETE CASCADE on both databases).
		if err := tx.Exec(`DELETE FROM conversations WHERE id = ?`, id).Error; err != nil {
			return err
		}
		d.Deleted = true
		if !s.q.sqlite {
			return nil
		}
		return rewindSearch(tx)
	})
	switch {
	case err != nil:
		return core.Deletion{}, fmt.Errorf("deleting conversation %d: %w", id, err)
	case !found:
		return core.Deletion{}, fmt.Errorf("deleting conversation %d: %w", id, core.ErrNotFound)
	case d.Blocked():
		return d, fmt.Errorf("deleting conversation %d: %w", id, core.ErrBlockedByAutomations)
	}
	return d, nil
}

// rewindSearch moves SQLite's search progress back below the newest
// message left: deleting the newest messages lets SQLite hand their ids
// out again, and the index must read them.
func rewindSearch(tx *gorm.DB) error {
	if err := tx.Exec(`UPDATE search_progress SET last_message_id =
		MIN(last_message_id, COALESCE((SELECT MAX(id) FROM messages), 0)) WHERE id = 1`).Error; err != nil {
		return fmt.Errorf("rewinding the search index: %w", err)
	}
	return nil
}

// unindex deletes a conversation's entries from SQLite's search index,
// which has no foreign key to cascade along.
func unindex(tx *gorm.DB, conv int64) error {
	if err := tx.Exec(`DELETE FROM message_search WHERE docid IN (SELECT id FROM messages WHERE conversation_id = ?)`, conv).Error; err != nil {
		return fmt.Errorf("deleting search entries: %w", err)
	}
	if _, ok := allDocID(conv, 1); ok {
		if err := tx.Exec(`DELETE FROM message_search_all WHERE docid IN
				(SELECT (conversation_id << ?) | id FROM messages WHERE conversation_id = ? AND id < (1 << ?))`,
			allShift, conv, allShift).Error; err != nil {
			return fmt.Errorf("deleting search entries: %w", err)
		}
	}
	return nil
}

// automations reads the conversation's recurring jobs by id. On PostgreSQL
// they are locked too, so one cannot be re-enabled while we decide.
func (s *Directory) automations(tx *gorm.DB, convID int64) ([]core.Automation, error) {
	q := `SELECT id, name, status FROM jobs WHERE conversation_id = ? AND kind = ? ORDER BY id`
	if !s.q.sqlite {
		q += ` FOR UPDATE`
	}
	type row struct {
		id     int64
		name   string
		status string
	}
	rows, err := queryAll(tx, q, []any{convID, string(core.JobAgentTurn)}, func(r *row) []any {
		return []any{&r.id, &r.name, &r.status}
	})
	if err != nil {
		return nil, fmt.Errorf("reading recurring jobs: %w", err)
	}
	out := make([]core.Automation, len(rows))
	for i, r := range rows {
		st := core.JobStatus(r.status)
		out[i] = core.Automation{ID: r.id, Name: r.name, Enabled: st == core.JobPending || st == core.JobSending}
	}
	return out, nil
}

func anyEnabled(autos []core.Automation) bool {
	for _, a := range autos {
		if a.Enabled {
			return true
		}
	}
	return false
}
