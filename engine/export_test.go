package engine

import (
	"context"
	"time"

	"github.com/parleybot/parley/core"
)

// LimitReached and TellLimit let the external tests drive what the turn
// executor does with per-user limits as a turn starts.
func (d *Dispatcher) LimitReached(ctx context.Context, conv core.Conversation, now time.Time) (string, error) {
	return d.intake.LimitReached(ctx, conv, now)
}

func (d *Dispatcher) TellLimit(ctx context.Context, conv core.Conversation, limit string, now time.Time) {
	d.intake.TellLimit(ctx, conv, limit, now)
}
