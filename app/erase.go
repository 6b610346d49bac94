package app

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
)

// threadEraser is an adapter that keeps what users send itself (the web
// chat's uploads): an erasure takes it too.
type threadEraser interface {
	EraseThread(ctx context.Context, thread string) error
}

// erasure erases conversations for /erase, the API and the console, and
// what their platform's adapters keep of them.
type erasure struct{ a *app }

// conversation erases conversation id and returns the messages deleted.
func (e erasure) conversation(ctx context.Context, id int64, now time.Time) (int64, error) {
	st := e.a.store.AllBots()
	conv, err := st.Conversation(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("erasing conversation %d: %w", id, err)
	}
	n, err := st.EraseConversation(ctx, id, now)
	if err != nil {
		return n, err
	}
	return n, e.kept(ctx, conv)
}

// kept asks the adapters of conv's bot and platform to erase what they
// keep of its thread.
func (e erasure) kept(ctx context.Context, conv core.Conversation) error {
	for _, b := range e.a.bots {
		if conv.BotID != "" && b.id != conv.BotID {
			continue
		}
		for _, ad := range b.adapters {
			if er, ok := ad.(threadEraser); ok && ad.Platform() == conv.Platform {
				if err := er.EraseThread(ctx, conv.ChannelThreadID); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
