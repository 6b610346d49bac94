package spool

import (
	"context"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// Adapters ask the handler they were given for more than HandleInbound:
// the web chat for a conversation's history and the model's health,
// Telegram for the chat commands. The spool answers for the core behind
// it, so that putting it in front changes nothing else.

// historyReader is the core's History.
type historyReader interface {
	History(ctx context.Context, p core.Platform, channelThreadID string, limit int) ([]core.Message, error)
}

// History returns the core's history of a conversation (none when the
// core keeps none). Messages still in the spool are not in it yet.
func (s *Spool) History(ctx context.Context, p core.Platform, channelThreadID string, limit int) ([]core.Message, error) {
	if hr, ok := s.next.(historyReader); ok {
		return hr.History(ctx, p, channelThreadID, limit)
	}
	return nil, nil
}

// ModelHealth is the core's view of the model server.
func (s *Spool) ModelHealth() llm.Health {
	if r, ok := s.next.(core.ModelHealthReporter); ok {
		return r.ModelHealth()
	}
	return llm.Health{}
}

// Commands lists the core's chat commands.
func (s *Spool) Commands() []core.CommandInfo {
	if l, ok := s.next.(core.CommandLister); ok {
		return l.Commands()
	}
	return nil
}
