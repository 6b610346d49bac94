package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// AddMood appends a mood point and sets its ID (and CreatedAt from the
// store's clock when zero).
func (s *Moods) AddMood(ctx context.Context, m *core.MoodPoint) error {
	p := *m
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.now()
	}
	p.CreatedAt = utc(p.CreatedAt)
	err := s.write(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`INSERT INTO mood_points (conversation_id, session_record_id, valence, arousal, source, reason, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, p.ConversationID, nid(p.SessionRecordID), p.Valence, p.Arousal,
			p.Source, p.Reason, s.q.t(p.CreatedAt)).Row().Scan(&p.ID)
	})
	if err != nil {
		return fmt.Errorf("storing mood: %w", err)
	}
	*m = p
	return nil
}

// LatestMood returns the conversation's newest mood point
// (core.ErrNotFound when it has none).
func (s *Moods) LatestMood(ctx context.Context, conversationID int64) (core.MoodPoint, error) {
	var m core.MoodPoint
	err := s.r.WithContext(ctx).Raw(`SELECT `+moodCols+` FROM mood_points WHERE conversation_id = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, conversationID).Row().Scan(moodDest(&m)...)
	if err != nil {
		return core.MoodPoint{}, notFound(fmt.Sprintf("mood of conversation %d", conversationID), err)
	}
	return m, nil
}

// MoodHistory returns up to limit of the conversation's newest mood
// points, oldest first (for a chart).
func (s *Moods) MoodHistory(ctx context.Context, conversationID int64, limit int) ([]core.MoodPoint, error) {
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+moodCols+` FROM mood_points WHERE conversation_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`, []any{conversationID, limit}, moodDest)
	if err != nil {
		return nil, fmt.Errorf("reading the mood history of conversation %d: %w", conversationID, err)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
