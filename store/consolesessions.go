package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// RevokeConsoleSession records that the console session id was logged
// out: ConsoleSessionRevoked reports it, on every replica, until expires
// (when its cookie would have expired anyway). Rows past their expiry are
// deleted on the way, so the table holds only sessions that could still
// be presented. Revoking a session twice is no error.
func (s *Console) RevokeConsoleSession(ctx context.Context, id string, expires, now time.Time) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := exec(tx, `DELETE FROM console_revoked_sessions WHERE expires_at < ?`, s.q.t(now)); err != nil {
			return err
		}
		return exec(tx, `INSERT INTO console_revoked_sessions (session_id, expires_at) VALUES (?, ?)
			ON CONFLICT (session_id) DO NOTHING`, id, s.q.t(expires))
	})
	if err != nil {
		return fmt.Errorf("revoking a console session: %w", err)
	}
	return nil
}

// ConsoleSessionRevoked reports whether the console session id was logged
// out (RevokeConsoleSession).
func (s *Console) ConsoleSessionRevoked(ctx context.Context, id string) (bool, error) {
	var n int
	err := row(s.r.WithContext(ctx), `SELECT count(*) FROM console_revoked_sessions WHERE session_id = ?`, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("checking a console session: %w", err)
	}
	return n > 0, nil
}
