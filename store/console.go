package store

import (
	"context"
	"fmt"
	"math"

	"github.com/parleybot/parley/core"
)

// Console is the owner's console: conversations by activity, what
// happened across them all (overview.go), and its sessions
// (consolesessions.go). On a bot's view (ForBot) the lists and counts are
// that bot's; on AllBots, every bot's.
type Console struct{ *dbs }

// ConversationsByActivity lists the view's bot's conversations (AllBots:
// every bot's) by their newest message,
// most recent first, limit at a time (limit <= 0 means all); those without
// a message come last, newest first. The web console lists them so: an
// owner looks for who talked to the bot lately, not for the oldest id.
func (s *Console) ConversationsByActivity(ctx context.Context, limit, offset int) ([]core.Conversation, error) {
	if limit <= 0 {
		limit = math.MaxInt32
	}
	// "IS NULL" first: SQLite and PostgreSQL disagree on where NULLs sort
	// by default, and both understand this.
	cond, args := s.botCond(`bot_id`)
	q := `SELECT ` + conversationCols + ` FROM conversations WHERE 1 = 1` + cond + `
		ORDER BY last_message_at IS NULL, last_message_at DESC, id DESC LIMIT ? OFFSET ?`
	out, err := queryAll(s.r.WithContext(ctx), q, append(args, limit, max(offset, 0)), conversationDest)
	if err != nil {
		return nil, fmt.Errorf("listing conversations by activity: %w", err)
	}
	return out, nil
}
