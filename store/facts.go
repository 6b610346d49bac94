package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// AddFact stores a fact and sets its ID (CreatedAt and LastAccessedAt
// from the store's clock when zero). Its key must be new in the
// conversation.
func (s *Memory) AddFact(ctx context.Context, f *core.Fact) error {
	v := *f
	if v.CreatedAt.IsZero() {
		v.CreatedAt = s.now()
	}
	if v.LastAccessedAt.IsZero() {
		v.LastAccessedAt = v.CreatedAt
	}
	v.CreatedAt, v.LastAccessedAt = utc(v.CreatedAt), utc(v.LastAccessedAt)
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`INSERT INTO facts (conversation_id, fact_key, content, created_at, last_accessed_at)
			VALUES (?, ?, ?, ?, ?) RETURNING id`, v.ConversationID, v.Key, v.Content, s.q.t(v.CreatedAt),
			s.q.t(v.LastAccessedAt)).Row().Scan(&v.ID)
	})
	if err != nil {
		return fmt.Errorf("storing fact %s: %w", v.Key, err)
	}
	*f = v
	return nil
}

// Facts returns the conversation's facts by key.
func (s *Memory) Facts(ctx context.Context, conversationID int64) ([]core.Fact, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+factCols+` FROM facts WHERE conversation_id = ? ORDER BY fact_key`,
		[]any{conversationID}, factDest)
	if err != nil {
		return nil, fmt.Errorf("reading facts of conversation %d: %w", conversationID, err)
	}
	return out, nil
}

// RememberFact stores content as a new fact of the conversation, with the
// next free key (F01, F02…), and evicts the least recently used facts
// beyond max. It returns the fact and the keys evicted.
func (s *Memory) RememberFact(ctx context.Context, conversationID int64, content string, max int, at time.Time) (core.Fact, []string, error) {
	f := core.Fact{ConversationID: conversationID, Content: content, CreatedAt: utc(at), LastAccessedAt: utc(at)}
	var evicted []string
	err := s.write(ctx, func(tx *gorm.DB) error {
		evicted = evicted[:0]
		var keys []string
		if err := tx.Raw(`SELECT fact_key FROM facts WHERE conversation_id = ?`, conversationID).Scan(&keys).Error; err != nil {
			return err
		}
		next := 1
		for _, k := range keys {
			if n, err := strconv.Atoi(strings.TrimPrefix(k, "F")); err == nil && n >= next {
				next = n + 1
			}
		}
		f.Key = fmt.Sprintf("F%02d", next)
		if err := tx.Raw(`INSERT INTO facts (conversation_id, fact_key, content, created_at, last_accessed_at)
			VALUES (?, ?, ?, ?, ?) RETURNING id`, conversationID, f.Key, f.Content, s.q.t(f.CreatedAt),
			s.q.t(f.LastAccessedAt)).Row().Scan(&f.ID); err != nil {
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

// UpdateFact rewrites a fact of the conversation and marks it used.
func (s *Memory) UpdateFact(ctx context.Context, conversationID int64, key, content string, at time.Time) error {
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE facts SET content = ?, last_accessed_at = ? WHERE conversation_id = ? AND fact_key = ?`,
			content, s.q.t(at), conversationID, key)
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

// TouchFacts marks the conversation's facts with the given keys as used at.
func (s *Memory) TouchFacts(ctx context.Context, conversationID int64, keys []string, at time.Time) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE facts SET last_accessed_at = ? WHERE conversation_id = ? AND fact_key IN ?`,
			s.q.t(at), conversationID, keys).Error
	})
	if err != nil {
		return fmt.Errorf("touching facts: %w", err)
	}
	return nil
}

// ForgetFact deletes the conversation's fact with key and returns it
// (core.ErrNotFound when it has none).
func (s *Memory) ForgetFact(ctx context.Context, conversationID int64, key string) (core.Fact, error) {
	var f core.Fact
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`DELETE FROM facts WHERE conversation_id = ? AND fact_key = ? RETURNING `+factCols,
			conversationID, key).Row().Scan(factDest(&f)...)
	})
	if err != nil {
		return core.Fact{}, notFound(fmt.Sprintf("fact %s", key), err)
	}
	return f, nil
}
