package core

import (
	"context"

	"github.com/parleybot/parley/core/llm"
)

// Host is what the core hands an adapter at Start: where its inbound
// messages go, and what it may read back (the web chat shows history and
// the model's health, Telegram registers the chat commands). An adapter
// uses what it needs and never looks for more by type assertion, so a
// layer put in front of the core (the inbound spool) passes it all on by
// implementing Host. engine.Dispatcher implements it.
type Host interface {
	InboundHandler
	TapHandler
	ChangeHandler
	ReactionHandler
	// History returns up to limit of a conversation's newest messages,
	// oldest first; none for a conversation the bot does not know.
	History(ctx context.Context, p Platform, channelThreadID string, limit int) ([]Message, error)
	// ModelHealth is the model server's state as of the last call.
	ModelHealth() llm.Health
	// Commands lists the chat commands the bot answers; empty when they
	// are off.
	Commands() []CommandInfo
}

// InboundOnly is a Host around an InboundHandler alone: no history, no
// model health, no commands. Tools and tests that only take messages in
// hand it to an adapter.
type InboundOnly struct{ InboundHandler }

// History returns nothing.
func (InboundOnly) History(context.Context, Platform, string, int) ([]Message, error) {
	return nil, nil
}

// ModelHealth is unknown.
func (InboundOnly) ModelHealth() llm.Health { return llm.Health{} }

// Commands lists none.
func (InboundOnly) Commands() []CommandInfo { return nil }

// HandleReaction ignores the reaction: nothing stores it.
func (InboundOnly) HandleReaction(context.Context, Reaction) error { return nil }

// HandleChange ignores the change: nothing stores it.
func (InboundOnly) HandleChange(context.Context, MessageChange) error { return nil }

// HandleTap makes no choice: nothing records it.
func (InboundOnly) HandleTap(context.Context, InboundMessage) (TapAnswer, error) {
	return TapAnswer{Notice: NoticeStaleButton}, nil
}

// engine.Dispatcher is the host of the adapters it starts.
