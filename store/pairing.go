package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
)

const pairingCols = `id, bot_id, platform, user_id, thread_id, display_name, code, status, created_at, expires_at, decided_at, decided_by`

func pairingDest(p *access.Request) []any {
	return []any{&p.ID, &p.BotID, &p.Platform, &p.UserID, &p.ThreadID, &p.DisplayName, &p.Code, &p.Status,
		timeCol{&p.CreatedAt}, timeCol{&p.ExpiresAt}, nullTimeCol{&p.DecidedAt}, &p.DecidedBy}
}

// RequestPairing is the view's bot's answer to an unknown user: their
// newest pairing when they were approved or got a code less than access.CodeTTL ago
// (issued false: no new code, the user is told nothing more), else a new
// code valid for access.CodeTTL (issued true), unless access.MaxPendingCodes
// are waiting on the platform (access.ErrFull).
func (s *Directory) RequestPairing(ctx context.Context, platform core.Platform, userID, threadID, displayName string, now time.Time) (p access.Request, issued bool, err error) {
	if s.bot == "" {
		return access.Request{}, false, errNoBot
	}
	err = s.write(ctx, func(tx *gorm.DB) error {
		p, issued = access.Request{}, false
		err := row(tx, `SELECT `+pairingCols+` FROM pairings WHERE bot_id = ? AND platform = ? AND user_id = ? ORDER BY id DESC LIMIT 1`,
			s.bot, string(platform), userID).Scan(pairingDest(&p)...)
		switch {
		case err == nil && (p.Status == access.Approved || p.CreatedAt.After(now.Add(-access.CodeTTL))):
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		var waiting int
		if err := row(tx, `SELECT count(*) FROM pairings WHERE bot_id = ? AND platform = ? AND status = 'pending' AND expires_at > ?`,
			s.bot, string(platform), s.q.t(now)).Scan(&waiting); err != nil {
			return err
		}
		if waiting >= access.MaxPendingCodes {
			return access.ErrFull
		}
		code, err := access.NewCode()
		if err != nil {
			return err
		}
		p = access.Request{BotID: s.bot, Platform: string(platform), UserID: userID, ThreadID: threadID, DisplayName: displayName, Code: code,
			Status: access.Pending, CreatedAt: now.UTC(), ExpiresAt: now.Add(access.CodeTTL).UTC()}
		issued = true
		return row(tx, `INSERT INTO pairings (bot_id, platform, user_id, thread_id, display_name, code, status, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?) RETURNING id`,
			s.bot, string(platform), userID, threadID, displayName, code, s.q.t(p.CreatedAt), s.q.t(p.ExpiresAt)).Scan(&p.ID)
	})
	if errors.Is(err, access.ErrFull) {
		return access.Request{}, false, err
	}
	if err != nil {
		return access.Request{}, false, fmt.Errorf("pairing %s user %s: %w", platform, userID, err)
	}
	return p, issued, nil
}

// Paired reports whether the user was approved on the view's bot.
func (s *Directory) Paired(ctx context.Context, platform core.Platform, userID string) (bool, error) {
	var n int
	err := row(s.r.WithContext(ctx), `SELECT count(*) FROM pairings WHERE bot_id = ? AND platform = ? AND user_id = ? AND status = 'approved'`,
		s.bot, string(platform), userID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("checking the pairing of %s user %s: %w", platform, userID, err)
	}
	return n > 0, nil
}

// DecidePairing approves or denies the pending code (any bot's on
// AllBots), for by. A code that is unknown, expired or decided already
// is core.ErrNotFound.
func (s *Directory) DecidePairing(ctx context.Context, code string, approve bool, by string, now time.Time) (access.Request, error) {
	code = access.NormalizeCode(code)
	status := access.Denied
	if approve {
		status = access.Approved
	}
	cond, args := s.botCond("bot_id")
	var p access.Request
	err := s.write(ctx, func(tx *gorm.DB) error {
		err := row(tx, `UPDATE pairings SET status = ?, decided_at = ?, decided_by = ?
			WHERE code = ? AND status = 'pending' AND expires_at > ?`+cond+` RETURNING `+pairingCols,
			append([]any{status, s.q.t(now), by, code, s.q.t(now)}, args...)...).Scan(pairingDest(&p)...)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no code %s is waiting (codes last an hour; a user gets a new one with their next message after that): %w",
				code, core.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return access.Request{}, fmt.Errorf("deciding pairing code %s: %w", code, err)
	}
	return p, nil
}

// Pairings lists the view's bot's codes waiting at now, and the users let
// in when decided is true, newest first.
func (s *Directory) Pairings(ctx context.Context, now time.Time, decided bool) ([]access.Request, error) {
	cond, args := s.botCond("bot_id")
	where := `status = 'pending' AND expires_at > ?`
	if decided {
		where = `(` + where + ` OR status = 'approved')`
	}
	out, err := queryAll(s.r.WithContext(ctx), `SELECT `+pairingCols+` FROM pairings WHERE `+where+cond+` ORDER BY id DESC LIMIT 1000`,
		append([]any{s.q.t(now)}, args...), pairingDest)
	if err != nil {
		return nil, fmt.Errorf("listing pairings: %w", err)
	}
	return out, nil
}
