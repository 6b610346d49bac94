// Package pace keeps an adapter's sends at its platform's pace (a bot-wide
// rate and a per-chat rate with a short burst) instead of finding the
// limits by 429s. Replies go ahead of background sends (core.WithBackground).
package pace

import (
	"context"

	"github.com/parleybot/parley/core"
)

// Limits is a platform's sending pace. A zero rate is no limit.
type Limits struct {
	// PerSecond is messages per second for the whole bot (0: none).
	PerSecond float64 `yaml:"per_second"`
	// PerChatPerSecond is messages per second to one chat or channel (0: none).
	PerChatPerSecond float64 `yaml:"per_chat_per_second"`
	// PerChatBurst is how many messages one chat may get at once before
	// PerChatPerSecond applies (0: 1).
	PerChatBurst int `yaml:"per_chat_burst"`
}

// Pacer paces one bot's sends. It is safe for concurrent use.
type Pacer struct {
	limits Limits
	clock  core.Clock
}

// New returns a Pacer for l on clock.
func New(l Limits, clock core.Clock) *Pacer {
	return &Pacer{limits: l, clock: clock}
}

// Wait waits until one more message may go to chat (STUB: returns at once).
func (p *Pacer) Wait(ctx context.Context, chat string) error {
	return ctx.Err()
}
