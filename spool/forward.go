package spool

import (
	"context"
	"fmt"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// forward is what the spool passes to the core behind it as it comes:
// reads, and the calls that answer at once.
type forward struct{ next core.Host }

// The spool is the host of the adapters in front of it: what they read
// back (the web chat's history and model health, Telegram's chat
// commands) comes from the core behind it, so that putting the spool in
// front changes nothing else.
var _ core.Host = (*Spool)(nil)

// History returns the core's history of a conversation. Messages still in
// the spool are not in it yet.
func (s forward) History(ctx context.Context, p core.Platform, channelThreadID string, limit int) ([]core.Message, error) {
	return s.next.History(ctx, p, channelThreadID, limit)
}

// ModelHealth is the core's view of the model server.
func (s forward) ModelHealth() llm.Health { return s.next.ModelHealth() }

// Commands lists the core's chat commands.
func (s forward) Commands() []core.CommandInfo { return s.next.Commands() }

// HandleTap goes to the core at once: a tap is answered with what the
// record says, so it cannot wait in the spool (with the database down it
// fails, and the adapter acknowledges it without a choice).
func (s forward) HandleTap(ctx context.Context, msg core.InboundMessage) (core.TapAnswer, error) {
	return s.next.HandleTap(ctx, msg)
}

// HandleChange goes to the core once the conversation's messages held in
// memory have been handed on: an edit must not overtake the message it
// changes. (A message spooled to the file while the store is down is
// stored later; the change, refused by the same store now, is the
// adapter's to report.)
func (s *Spool) HandleChange(ctx context.Context, c core.MessageChange) error {
	key := string(c.Platform) + "\x00" + c.ChannelThreadID
	for {
		s.mu.Lock()
		_, held := s.queues[key]
		emptied := s.emptied
		s.mu.Unlock()
		if !held {
			return s.next.HandleChange(ctx, c)
		}
		select {
		case <-emptied:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the message a change is about: %w", ctx.Err())
		}
	}
}

// HandleReaction goes to the core at once: a reaction is to a bot
// message, stored before it was sent, never one waiting in the spool.
func (s forward) HandleReaction(ctx context.Context, r core.Reaction) error {
	return s.next.HandleReaction(ctx, r)
}
