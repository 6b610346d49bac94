package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Migrations are the plugin's tables: facts, and the fact engine's
// progress per conversation (conversations.facts_seq). Databases from
// before the plugin owned them have both (the store's migrations 2 and 4
// made them, and still do on a new database), so the first version
// changes nothing there: IF NOT EXISTS, and the column only when missing.
//
// The progress stays a column of conversations rather than moving to a
// table of the plugin's: the claim compares it with last_seq in the same
// row, old and new replicas sharing a database during an upgrade keep
// claiming the same messages once, and nothing has to be copied.
func (p *Plugin) Migrations() []core.Migration {
	return []core.Migration{{
		Version: 1,
		Name:    "facts",
		Statements: []string{
			`CREATE TABLE IF NOT EXISTS facts (
				id {{id}},
				conversation_id {{bigint}} NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
				fact_key TEXT NOT NULL,
				content TEXT NOT NULL,
				created_at {{time}} NOT NULL,
				last_accessed_at {{time}} NOT NULL
			)`,
			// A conversation's facts by key (F01…), unique within it.
			`CREATE UNIQUE INDEX IF NOT EXISTS facts_conversation_key ON facts (conversation_id, fact_key)`,
		},
		// The seq of the newest message the fact engine has read.
		Columns: []core.Column{{Table: "conversations", Name: "facts_seq", Definition: "{{bigint}} NOT NULL DEFAULT 0"}},
	}, embeddingsMigration(), embedAgainMigration(), {
		Version: 4,
		Name:    "facts_epoch",
		// Counts /forget all in the conversation: a fact pass that began
		// before one writes nothing after it (FactStore.During).
		Columns: []core.Column{{Table: "conversations", Name: "facts_epoch", Definition: "{{bigint}} NOT NULL DEFAULT 0"}},
	}}
}

// FactStore is the plugin's facts and the fact engine's progress, on the
// store's database.
type FactStore struct {
	db    core.Database
	clock core.Clock
	// during, when set, is the fact pass whose writes these are: each
	// writes only while its conversation's facts were not forgotten since
	// the pass claimed it (During).
	during *FactWork
}

// ErrForgotten is what a pass's write returns when the user asked to
// forget every fact after the pass began: nothing of it may be written.
var ErrForgotten = errors.New("the user asked to forget their facts after this pass began")

// During is the store as fact pass w writes to it: its Remember, Update
// and Touch fail with ErrForgotten, writing nothing, once the user's
// "/forget all" came after w was claimed. The check and the write are one
// transaction, which ForgetAllFacts's update of the same row waits for.
func (s *FactStore) During(w FactWork) *FactStore {
	c := *s
	c.during = &w
	return &c
}

// guard checks, in tx, that the facts of conv were not forgotten since
// the pass began; the update locks the conversation's row until tx ends.
func (s *FactStore) guard(tx *gorm.DB, conv int64) error {
	if s.during == nil {
		return nil
	}
	res := tx.Exec(`UPDATE conversations SET facts_epoch = facts_epoch WHERE id = ? AND facts_epoch = ?`, conv, s.during.Epoch)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return ErrForgotten
	}
	return nil
}

var _ core.FactKeeper = (*FactStore)(nil)

// NewFactStore returns the facts kept in db.
func NewFactStore(db core.Database) *FactStore { return &FactStore{db: db, clock: core.SystemClock{}} }

// FactWork is a stretch of a conversation the fact engine has claimed to
// read: the messages with FromSeq < seq <= ToSeq.
type FactWork struct {
	ConversationID int64
	FromSeq        int64
	ToSeq          int64
	// Epoch is the conversation's facts_epoch when the work was claimed.
	Epoch int64
}

const factCols = `id, conversation_id, fact_key, content, created_at, last_accessed_at`

func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// Add stores a fact and sets its ID (CreatedAt and LastAccessedAt from the
// clock when zero). Its key must be new in the conversation.
func (s *FactStore) Add(ctx context.Context, f *core.Fact) error {
	v := *f
	if v.CreatedAt.IsZero() {
		v.CreatedAt = s.clock.Now()
	}
	if v.LastAccessedAt.IsZero() {
		v.LastAccessedAt = v.CreatedAt
	}
	v.CreatedAt, v.LastAccessedAt = utc(v.CreatedAt), utc(v.LastAccessedAt)
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		return s.insert(tx, &v)
	})
	if err != nil {
		return fmt.Errorf("storing fact %s: %w", v.Key, err)
	}
	*f = v
	return nil
}

func (s *FactStore) insert(tx *gorm.DB, f *core.Fact) error {
	return tx.Raw(`INSERT INTO facts (conversation_id, fact_key, content, created_at, last_accessed_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id`, f.ConversationID, f.Key, f.Content, s.db.Time(f.CreatedAt),
		s.db.Time(f.LastAccessedAt)).Row().Scan(&f.ID)
}

// Facts returns the conversation's facts by key.
func (s *FactStore) Facts(ctx context.Context, conversationID int64) ([]core.Fact, error) {
	rows, err := s.db.Read(ctx).Raw(`SELECT `+factCols+` FROM facts WHERE conversation_id = ? ORDER BY fact_key`,
		conversationID).Rows()
	if err != nil {
		return nil, fmt.Errorf("reading facts of conversation %d: %w", conversationID, err)
	}
	defer func() { _ = rows.Close() }()
	var (
		out []core.Fact
		f   core.Fact
		d   = s.dest(&f)
	)
	for rows.Next() {
		if err := rows.Scan(d...); err != nil {
			return nil, fmt.Errorf("reading facts of conversation %d: %w", conversationID, err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading facts of conversation %d: %w", conversationID, err)
	}
	return out, rows.Close()
}

func (s *FactStore) dest(f *core.Fact) []any {
	return []any{&f.ID, &f.ConversationID, &f.Key, &f.Content, s.db.ScanTime(&f.CreatedAt), s.db.ScanTime(&f.LastAccessedAt)}
}

// Remember stores content as a new fact of the conversation, with the next
// free key (F01, F02…), and evicts the least recently used facts beyond
// max. It returns the fact and the keys evicted.
func (s *FactStore) Remember(ctx context.Context, conversationID int64, content string, max int, at time.Time) (core.Fact, []string, error) {
	f := core.Fact{ConversationID: conversationID, Content: content, CreatedAt: utc(at), LastAccessedAt: utc(at)}
	var evicted []string
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		evicted = evicted[:0]
		if err := s.guard(tx, conversationID); err != nil {
			return err
		}
		var keys []string
		if err := tx.Raw(`SELECT fact_key FROM facts WHERE conversation_id = ?`, conversationID).Scan(&keys).Error; err != nil {
			return err
		}
		f.Key = nextKey(keys)
		if err := s.insert(tx, &f); err != nil {
			return err
		}
		if over := len(keys) + 1 - max; over > 0 {
			if err := tx.Raw(`SELECT fact_key FROM facts WHERE conversation_id = ? AND id <> ?
				ORDER BY last_accessed_at, id LIMIT ?`, conversationID, f.ID, over).Scan(&evicted).Error; err != nil {
				return err
			}
			if err := tx.Exec(`DELETE FROM facts WHERE conversation_id = ? AND fact_key IN ?`, conversationID, evicted).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return core.Fact{}, nil, fmt.Errorf("remembering a fact: %w", err)
	}
	return f, evicted, nil
}

// nextKey is the key after the highest of keys: F01 for none.
func nextKey(keys []string) string {
	next := 1
	for _, k := range keys {
		if n, err := strconv.Atoi(strings.TrimPrefix(k, "F")); err == nil && n >= next {
			next = n + 1
		}
	}
	return fmt.Sprintf("F%02d", next)
}

// Update rewrites a fact of the conversation and marks it used.
func (s *FactStore) Update(ctx context.Context, conversationID int64, key, content string, at time.Time) error {
	var n int64
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		if err := s.guard(tx, conversationID); err != nil {
			return err
		}
		res := tx.Exec(`UPDATE facts SET content = ?, last_accessed_at = ? WHERE conversation_id = ? AND fact_key = ?`,
			content, s.db.Time(at), conversationID, key)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("updating fact %s: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("updating fact %s: %w", key, core.ErrNotFound)
	}
	return nil
}

// Touch marks the conversation's facts with the given keys as used at.
func (s *FactStore) Touch(ctx context.Context, conversationID int64, keys []string, at time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		if err := s.guard(tx, conversationID); err != nil {
			return err
		}
		return tx.Exec(`UPDATE facts SET last_accessed_at = ? WHERE conversation_id = ? AND fact_key IN ?`,
			s.db.Time(at), conversationID, keys).Error
	})
	if err != nil {
		return fmt.Errorf("touching facts: %w", err)
	}
	return nil
}

// Forget deletes the conversation's fact with key and returns it
// (core.ErrNotFound when it has none).
func (s *FactStore) Forget(ctx context.Context, conversationID int64, key string) (core.Fact, error) {
	var f core.Fact
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`DELETE FROM facts WHERE conversation_id = ? AND fact_key = ? RETURNING `+factCols,
			conversationID, key).Row().Scan(s.dest(&f)...)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return core.Fact{}, fmt.Errorf("fact %s: %w", key, core.ErrNotFound)
	}
	if err != nil {
		return core.Fact{}, fmt.Errorf("reading fact %s: %w", key, err)
	}
	return f, nil
}

// ForgetAllFacts deletes every fact of the conversation and returns how many
// there were. The messages the fact engine has not read yet are passed
// over too (facts_seq moves to last_seq): what the user said before
// asking to be forgotten is not read back into new facts. A pass already
// reading them writes nothing after this (facts_epoch, During).
func (s *FactStore) ForgetAllFacts(ctx context.Context, conversationID int64) (int, error) {
	var n int64
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`DELETE FROM facts WHERE conversation_id = ?`, conversationID)
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		return tx.Exec(`UPDATE conversations SET facts_seq = last_seq, facts_epoch = facts_epoch + 1 WHERE id = ?`, conversationID).Error
	})
	if err != nil {
		return 0, fmt.Errorf("forgetting the facts of conversation %d: %w", conversationID, err)
	}
	return int(n), nil
}

// ClaimWork takes up to limit conversations with messages the fact engine
// has not read, moving their facts_seq to their last_seq. The
// conversations are looked for on a reader (a scan of every conversation
// must not hold SQLite's one writer); a conversation another process
// claimed meanwhile is not taken, so no two read the same messages. On a
// bot's database handle only that bot's conversations are taken: its
// model reads them, and another bot's users' words must never reach it.
func (s *FactStore) ClaimWork(ctx context.Context, limit int) ([]FactWork, error) {
	var rows []struct {
		ID, FactsSeq, LastSeq, FactsEpoch int64
	}
	q, args := `SELECT id, facts_seq, last_seq, facts_epoch FROM conversations WHERE last_seq > facts_seq`, []any{}
	if b, ok := s.db.(interface{ Bot() string }); ok && b.Bot() != "" {
		q += ` AND bot_id = ?`
		args = append(args, b.Bot())
	}
	if err := s.db.Read(ctx).Raw(q+` ORDER BY id LIMIT ?`, append(args, limit)...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("looking for fact work: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var out []FactWork
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		out = out[:0]
		for _, r := range rows {
			res := tx.Exec(`UPDATE conversations SET facts_seq = ? WHERE id = ? AND facts_seq = ? AND facts_epoch = ?`,
				r.LastSeq, r.ID, r.FactsSeq, r.FactsEpoch)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 1 {
				out = append(out, FactWork{ConversationID: r.ID, FromSeq: r.FactsSeq, ToSeq: r.LastSeq, Epoch: r.FactsEpoch})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claiming fact work: %w", err)
	}
	return out, nil
}

// ReleaseWork hands claimed work back (the model was down): facts_seq
// returns to w.FromSeq unless it moved on meanwhile.
func (s *FactStore) ReleaseWork(ctx context.Context, w FactWork) error {
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE conversations SET facts_seq = ? WHERE id = ? AND facts_seq = ?`, w.FromSeq, w.ConversationID, w.ToSeq).Error
	})
	if err != nil {
		return fmt.Errorf("releasing fact work: %w", err)
	}
	return nil
}
