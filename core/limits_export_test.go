package core

import (
	"context"
	"time"
)

// LimitReached and TellLimit let the external tests drive what the turn
// executor does with per-user limits as a turn starts.
func (d *Dispatcher) LimitReached(ctx context.Context, conv Conversation, now time.Time) (string, error) {
	return d.limitReached(ctx, conv, now)
}

func (d *Dispatcher) TellLimit(ctx context.Context, conv Conversation, limit string, now time.Time) {
	d.tellLimit(ctx, conv, limit, now)
}
