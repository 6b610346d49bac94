package mood

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
)

// Migrations are the plugin's table, mood_points. Databases from before
// the plugin owned it have it already (the store's migration 2 made it,
// and still does on a new database), so the first version creates
// nothing there: only IF NOT EXISTS.
func (p *Plugin) Migrations() []core.Migration {
	return []core.Migration{{
		Version: 1,
		Name:    "mood points",
		Statements: []string{
			`CREATE TABLE IF NOT EXISTS mood_points (
				id {{id}},
				conversation_id {{bigint}} NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
				session_record_id {{bigint}} REFERENCES session_records (id) ON DELETE SET NULL,
				valence DOUBLE PRECISION NOT NULL,
				arousal DOUBLE PRECISION NOT NULL,
				source TEXT NOT NULL,
				reason TEXT NOT NULL DEFAULT '',
				created_at {{time}} NOT NULL
			)`,
			// The newest mood of a conversation, its history for the chart,
			// and the cascade.
			`CREATE INDEX IF NOT EXISTS mood_points_conversation ON mood_points (conversation_id, created_at, id)`,
			`CREATE INDEX IF NOT EXISTS mood_points_session_record ON mood_points (session_record_id)
				WHERE session_record_id IS NOT NULL`,
		},
	}}
}

// Points is the plugin's table of mood points, on the store's database.
type Points struct {
	db    core.Database
	clock core.Clock
}

var _ core.MoodKeeper = (*Points)(nil)

// NewPoints returns the mood points kept in db.
func NewPoints(db core.Database) *Points { return &Points{db: db, clock: core.SystemClock{}} }

const pointCols = `id, conversation_id, session_record_id, valence, arousal, source, reason, created_at`

// Add appends a mood point and sets its ID (and CreatedAt from the clock
// when zero).
func (s *Points) Add(ctx context.Context, m *core.MoodPoint) error {
	p := *m
	if p.CreatedAt.IsZero() {
		p.CreatedAt = s.clock.Now()
	}
	p.CreatedAt = p.CreatedAt.UTC().Truncate(time.Microsecond)
	var rec any
	if p.SessionRecordID != nil {
		rec = *p.SessionRecordID
	}
	err := s.db.Write(ctx, func(tx *gorm.DB) error {
		return tx.Raw(`INSERT INTO mood_points (conversation_id, session_record_id, valence, arousal, source, reason, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`, p.ConversationID, rec, p.Valence, p.Arousal,
			p.Source, p.Reason, s.db.Time(p.CreatedAt)).Row().Scan(&p.ID)
	})
	if err != nil {
		return fmt.Errorf("storing mood: %w", err)
	}
	*m = p
	return nil
}

// Latest returns the conversation's newest mood point (core.ErrNotFound
// when it has none).
func (s *Points) Latest(ctx context.Context, conversationID int64) (core.MoodPoint, error) {
	var m pointRow
	err := s.db.Read(ctx).Raw(`SELECT `+pointCols+` FROM mood_points WHERE conversation_id = ?
		ORDER BY created_at DESC, id DESC LIMIT 1`, conversationID).Row().Scan(m.dest(s.db)...)
	if errors.Is(err, sql.ErrNoRows) {
		return core.MoodPoint{}, fmt.Errorf("mood of conversation %d: %w", conversationID, core.ErrNotFound)
	}
	if err != nil {
		return core.MoodPoint{}, fmt.Errorf("reading the mood of conversation %d: %w", conversationID, err)
	}
	return m.point(), nil
}

// MoodHistory returns up to limit of the conversation's newest mood points,
// oldest first (for a chart).
func (s *Points) MoodHistory(ctx context.Context, conversationID int64, limit int) ([]core.MoodPoint, error) {
	out, err := s.history(ctx, conversationID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the mood history of conversation %d: %w", conversationID, err)
	}
	slices.Reverse(out)
	return out, nil
}

func (s *Points) history(ctx context.Context, conversationID int64, limit int) ([]core.MoodPoint, error) {
	rows, err := s.db.Read(ctx).Raw(`SELECT `+pointCols+` FROM mood_points WHERE conversation_id = ?
		ORDER BY created_at DESC, id DESC LIMIT ?`, conversationID, limit).Rows()
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var (
		out []core.MoodPoint
		m   pointRow
		d   = m.dest(s.db)
	)
	for rows.Next() {
		if err := rows.Scan(d...); err != nil {
			return nil, err
		}
		out = append(out, m.point())
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// pointRow is a row of mood_points as scanned.
type pointRow struct {
	p   core.MoodPoint
	rec sql.NullInt64
}

func (r *pointRow) dest(db core.Database) []any {
	return []any{&r.p.ID, &r.p.ConversationID, &r.rec, &r.p.Valence, &r.p.Arousal, &r.p.Source, &r.p.Reason,
		db.ScanTime(&r.p.CreatedAt)}
}

// point is the row as a core.MoodPoint of its own.
func (r *pointRow) point() core.MoodPoint {
	p := r.p
	p.SessionRecordID = nil
	if r.rec.Valid {
		id := r.rec.Int64
		p.SessionRecordID = &id
	}
	return p
}
