package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Erasure is what an erased conversation leaves behind (Erasures): that
// it was erased, for which bot, when, and how many rows went. Nothing the
// user wrote or is called.
type Erasure struct {
	ID, ConversationID, Rows int64
	BotID                    string
	At                       time.Time
}

// EraseConversation is a user's erasure (/erase): it deletes the
// conversation and every row about it (messages, session records with
// their summaries and frozen prompts, runs, jobs, kept files, answered
// questions, and the rows of plugins' tables, which cascade from it by
// foreign key), whatever automations it has, records the erasure in
// erasures (at now) and returns how many rows went, over all tables (the
// conversation's row too; the search index's entries, which PostgreSQL
// keeps in a column, aside). Then it reclaims the space, so that none of
// the user's text is left in the database files: on SQLite the deleted
// content is overwritten with zeros, the search index merged without the
// user's terms and the WAL checkpointed and truncated; on PostgreSQL the
// tables are vacuumed, which removes the rows but zeroes nothing: their
// bytes stay in free page space, and the words in the search column's
// GIN index, until rewritten (see README). An unknown id, or on a bot's
// view (ForBot) another bot's conversation, is core.ErrNotFound.
//
// When the rows are deleted but the space could not be reclaimed (a
// reader kept the WAL busy past the busy timeout), it returns the rows
// and an error: the user's rows are gone, their bytes may not be yet.
func (s *Directory) EraseConversation(ctx context.Context, id int64, now time.Time) (rows int64, err error) {
	if now.IsZero() {
		now = s.now()
	}
	var (
		touched []string
		found   bool
	)
	err = s.write(ctx, func(tx *gorm.DB) error {
		rows, touched, found = 0, nil, false // a batch may run this again after a rollback
		bot, ok, err := s.lockForErasure(tx, id)
		if err != nil || !ok {
			return err
		}
		found = true
		if rows, touched, err = s.eraseRows(tx, id); err != nil {
			return err
		}
		if err := exec(tx, `INSERT INTO erasures (bot_id, conversation_id, rows, erased_at) VALUES (?, ?, ?, ?)`,
			bot, id, rows, s.q.t(now)); err != nil {
			return fmt.Errorf("recording the erasure: %w", err)
		}
		return nil
	})
	switch {
	case err != nil:
		return 0, fmt.Errorf("erasing conversation %d: %w", id, err)
	case !found:
		return 0, fmt.Errorf("erasing conversation %d: %w", id, core.ErrNotFound)
	}
	if err := s.reclaim(ctx, touched); err != nil {
		return rows, fmt.Errorf("erasing conversation %d: reclaiming the space: %w", id, err)
	}
	return rows, nil
}

// lockForErasure finds the view's bot's conversation id and returns its
// bot. On PostgreSQL the row lock makes a concurrent insert of a row
// referring to it (a message, a job) wait and then fail, so none lands
// between the count and the delete; SQLite's immediate transaction
// already excludes other writers.
func (s *Directory) lockForErasure(tx *gorm.DB, id int64) (string, bool, error) {
	cond, args := s.botCond(`bot_id`)
	q := `SELECT bot_id FROM conversations WHERE id = ?` + cond
	if !s.q.sqlite {
		q += ` FOR UPDATE`
	}
	var bot string
	switch err := row(tx, q, append([]any{id}, args...)...).Scan(&bot); {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("locking the conversation: %w", err)
	}
	return bot, true, nil
}

// eraseRows counts and deletes the conversation's rows, and returns how
// many went and the tables they went from. On SQLite the deleted content
// is overwritten (secure_delete) and the search index is merged so that
// the user's terms are gone from its segments too.
func (s *Directory) eraseRows(tx *gorm.DB, id int64) (rows int64, touched []string, err error) {
	counts, err := cascadeCounts(tx, s.q.sqlite, id)
	if err != nil {
		return 0, nil, err
	}
	for _, c := range counts {
		rows += c.rows
		touched = append(touched, c.table)
	}
	if s.q.sqlite {
		restore, serr := secureDelete(tx)
		if serr != nil {
			return 0, nil, serr
		}
		defer func() {
			if rerr := restore(); err == nil && rerr != nil {
				err = rerr
			}
		}()
		if err := unindex(tx, id); err != nil {
			return 0, nil, err
		}
	}
	// Who the user was let in as under pairing (their id and name): not
	// tied to the conversation by a key, gone with it all the same.
	res := tx.Exec(`DELETE FROM pairings WHERE (bot_id, platform, user_id) IN
		(SELECT bot_id, platform, channel_user_id FROM conversations WHERE id = ?)`, id)
	if res.Error != nil {
		return 0, nil, fmt.Errorf("deleting the user's pairing: %w", res.Error)
	}
	if res.RowsAffected > 0 {
		rows += res.RowsAffected
		touched = append(touched, "pairings")
	}
	// Everything else cascades: the store's tables and the plugins'.
	if err := exec(tx, `DELETE FROM conversations WHERE id = ?`, id); err != nil {
		return 0, nil, fmt.Errorf("deleting the conversation: %w", err)
	}
	if s.q.sqlite {
		if err := rewindSearch(tx); err != nil {
			return 0, nil, err
		}
		if err := optimizeSearch(tx); err != nil {
			return 0, nil, err
		}
	}
	return rows, touched, nil
}

// secureDelete turns SQLite's secure_delete on for the connection of tx,
// so that what this transaction deletes (cells, freed pages, overflow
// pages) is overwritten with zeros rather than left in free space, and
// returns what puts back the setting it had: the store turns it on for
// every connection (sqliteParams), but a DSN may turn it off.
func secureDelete(tx *gorm.DB) (func() error, error) {
	var was int
	if err := tx.Raw(`PRAGMA secure_delete`).Row().Scan(&was); err != nil {
		return nil, fmt.Errorf("reading secure_delete: %w", err)
	}
	if err := tx.Exec(`PRAGMA secure_delete = 1`).Error; err != nil {
		return nil, fmt.Errorf("turning secure_delete on: %w", err)
	}
	return func() error {
		if err := tx.Exec(`PRAGMA secure_delete = ` + strconv.Itoa(was)).Error; err != nil {
			return fmt.Errorf("restoring secure_delete: %w", err)
		}
		return nil
	}, nil
}

// optimizeSearch merges each FTS4 index into one segment. Deleting a
// document only adds a delete marker in a new segment: the old segments
// keep its terms until they are merged, which here they are, the old
// segments' rows deleted (overwritten, under secure_delete). It rewrites
// the whole index: at 100,000 messages (BenchmarkEraseConversation's 100
// conversations of 1,000) the two took 0.3–0.45 s together, of an
// erasure's 0.55–0.65 s (2 busy CPUs), holding the writer; erasures are
// rare, and a merge of only some segments could leave the user's terms.
func optimizeSearch(tx *gorm.DB) error {
	for _, t := range []string{"message_search", "message_search_all"} {
		if err := tx.Exec(fmt.Sprintf(`INSERT INTO %[1]s (%[1]s) VALUES ('optimize')`, t)).Error; err != nil {
			return fmt.Errorf("merging the search index %s: %w", t, err)
		}
	}
	return nil
}

// reclaim makes the deleted rows' bytes go from the database files once
// the deletion is committed. SQLite: a checkpoint copies the pages the
// deletion overwrote into the database file and truncates the WAL, whose
// older frames still hold the rows (it waits for readers up to the busy
// timeout). PostgreSQL: VACUUM (outside any transaction) removes the
// dead tuples of the tables, and of their TOAST tables, rows went from.
func (s *Directory) reclaim(ctx context.Context, touched []string) error {
	db := s.w.WithContext(ctx)
	if s.q.sqlite {
		var busy, frames, copied int
		if err := db.Raw(`PRAGMA wal_checkpoint(TRUNCATE)`).Row().Scan(&busy, &frames, &copied); err != nil {
			return fmt.Errorf("checkpointing: %w", err)
		}
		if busy != 0 {
			return fmt.Errorf("checkpointing: the WAL is still being read (%d of %d frames copied)", copied, frames)
		}
		return nil
	}
	if len(touched) == 0 {
		return nil
	}
	names := make([]string, len(touched))
	for i, t := range touched {
		names[i] = quoteIdent(t)
	}
	if err := db.Exec(`VACUUM ` + strings.Join(names, ", ")).Error; err != nil {
		return fmt.Errorf("vacuuming: %w", err)
	}
	return nil
}

// Erasures returns up to limit of the erasures recorded
// (EraseConversation), newest first: the view's bot's, every bot's on
// AllBots. limit <= 0 returns them all.
func (s *Directory) Erasures(ctx context.Context, limit int) ([]Erasure, error) {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	cond, args := s.botCond(`bot_id`)
	q := `SELECT id, bot_id, conversation_id, rows, erased_at FROM erasures WHERE 1 = 1` + cond + ` ORDER BY id DESC LIMIT ?`
	out, err := queryAll(s.r.WithContext(ctx), q, append(args, limit), func(e *Erasure) []any {
		return []any{&e.ID, &e.BotID, &e.ConversationID, &e.Rows, timeCol{&e.At}}
	})
	if err != nil {
		return nil, fmt.Errorf("reading erasures: %w", err)
	}
	return out, nil
}

// cascadeEdge is a foreign key whose rows are deleted with the row they
// refer to: child.col references parent.pcol ON DELETE CASCADE.
type cascadeEdge struct{ child, col, parent, pcol string }

// cascadeEdges reads the cascading foreign keys of one column (all of
// Parley's and its plugins') from the catalog: the store knows its own
// tables, not the plugins', whose rows it still must count.
func cascadeEdges(tx *gorm.DB, sqlite bool) ([]cascadeEdge, error) {
	q := `SELECT m.name, MIN(f."from"), MIN(f."table"), MIN(COALESCE(f."to", 'rowid'))
		FROM sqlite_master m, pragma_foreign_key_list(m.name) f
		WHERE m.type = 'table' AND f.on_delete = 'CASCADE'
		GROUP BY m.name, f.id HAVING COUNT(*) = 1`
	if !sqlite {
		q = `SELECT ch.relname, ca.attname, pa.relname, pk.attname
			FROM pg_constraint k
			JOIN pg_class ch ON ch.oid = k.conrelid
			JOIN pg_class pa ON pa.oid = k.confrelid
			JOIN pg_attribute ca ON ca.attrelid = k.conrelid AND ca.attnum = k.conkey[1]
			JOIN pg_attribute pk ON pk.attrelid = k.confrelid AND pk.attnum = k.confkey[1]
			WHERE k.contype = 'f' AND k.confdeltype = 'c' AND cardinality(k.conkey) = 1
			  AND k.connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`
	}
	edges, err := queryAll(tx, q, nil, func(e *cascadeEdge) []any { return []any{&e.child, &e.col, &e.parent, &e.pcol} })
	if err != nil {
		return nil, fmt.Errorf("reading foreign keys: %w", err)
	}
	return edges, nil
}

// tableRows is how many rows of a table an erasure deletes.
type tableRows struct {
	table string
	rows  int64
}

// cascadeCounts counts, before the delete, the rows deleting conversation
// id takes from each table (none listed with no row): the cascade itself
// reports no count.
func cascadeCounts(tx *gorm.DB, sqlite bool, id int64) ([]tableRows, error) {
	edges, err := cascadeEdges(tx, sqlite)
	if err != nil {
		return nil, err
	}
	tables := []string{"conversations"}
	for _, e := range edges {
		tables = append(tables, e.child)
	}
	slices.Sort(tables)
	var out []tableRows
	for _, t := range slices.Compact(tables) {
		where := doomedWhere(edges, t, id, 0)
		if where == "" {
			continue
		}
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM ` + quoteIdent(t) + ` WHERE ` + where).Row().Scan(&n); err != nil {
			return nil, fmt.Errorf("counting the rows of %s: %w", t, err)
		}
		if n > 0 {
			out = append(out, tableRows{t, n})
		}
	}
	return out, nil
}

// maxCascadeDepth bounds the chains of foreign keys doomedWhere follows
// (conversations, messages, message_files is 2), so a cycle cannot loop.
const maxCascadeDepth = 6

// doomedWhere is the condition picking the rows of table that deleting
// conversation id deletes: the row itself, or rows whose cascading
// foreign keys refer to doomed rows. "" when nothing of it goes.
func doomedWhere(edges []cascadeEdge, table string, id int64, depth int) string {
	if table == "conversations" {
		return `id = ` + strconv.FormatInt(id, 10)
	}
	if depth >= maxCascadeDepth {
		return ""
	}
	var ors []string
	for _, e := range edges {
		if e.child != table || e.parent == table {
			continue
		}
		if w := doomedWhere(edges, e.parent, id, depth+1); w != "" {
			ors = append(ors, fmt.Sprintf(`%s IN (SELECT %s FROM %s WHERE %s)`,
				quoteIdent(e.col), quoteIdent(e.pcol), quoteIdent(e.parent), w))
		}
	}
	return strings.Join(ors, ` OR `)
}

// quoteIdent quotes a name read from the catalog for SQL; SQLite's
// rowid (a foreign key naming no column) only unquoted.
func quoteIdent(name string) string {
	if name == "rowid" {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
