package turns

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/core"
)

// ackTimeout bounds one call to put the acknowledgement on or take it
// back; the turn's own context may end first (a restart), and the
// reaction must not be left behind half way.
const ackTimeout = 10 * time.Second

// ack is the bot's acknowledgement (bot.ack_reaction): its reaction to
// the user's latest message while the turn works on it, taken back once
// the reply is out. A platform that refuses the emoji costs a line in
// the log, never the turn.
type ack struct {
	log                  *slog.Logger
	r                    core.Reactor
	thread, msgID, emoji string
	// done closes when React has returned; on tells whether it worked.
	done chan struct{}
	on   bool
	// kept: the model reacted with the same emoji (tool react), which is
	// then its reaction to leave on.
	kept atomic.Bool
}

// acknowledge puts cfg.AckReaction on the message a user turn answers.
// The call runs beside the model's (which need not wait for the
// platform), counted in s.busy so that Stop waits for it. It is nil when
// the setting is off, the run answers no user (a cron turn, a
// follow-up), the platform has no reactions or the message no id.
func (s *speaker) acknowledge(ctx context.Context, log *slog.Logger, t *core.Turn, a core.Adapter) *ack {
	if s.cfg.AckReaction == "" || t.Run.Kind != core.RunUserTurn {
		return nil
	}
	r, ok := a.(core.Reactor)
	if !ok {
		return nil
	}
	m := latestUserMessage(t.History)
	if m == nil {
		return nil
	}
	k := &ack{log: log, r: r, thread: t.Conversation.ChannelThreadID, msgID: m.PlatformMessageID,
		emoji: s.cfg.AckReaction, done: make(chan struct{})}
	if react := t.React; react != nil {
		t.React = func(ctx context.Context, emoji string) error {
			err := react(ctx, emoji)
			if err == nil && emoji == k.emoji {
				k.kept.Store(true)
			}
			return err
		}
	}
	ctx = context.WithoutCancel(ctx)
	s.busy.Add(1)
	go func() {
		defer s.busy.Done()
		defer close(k.done)
		c, cancel := context.WithTimeout(ctx, ackTimeout)
		defer cancel()
		if err := r.React(c, k.thread, k.msgID, k.emoji); err != nil {
			// Once per turn: the emoji may be one the platform does not
			// take (Telegram's fixed set), which the log should tell.
			log.Info("acknowledgement reaction not shown", "emoji", k.emoji, "err", err)
			return
		}
		k.on = true
	}()
	return k
}

// takeBack takes the acknowledgement back, once React has returned, where
// the platform can (core.Unreactor). A nil k does nothing.
func (k *ack) takeBack(ctx context.Context) {
	if k == nil {
		return
	}
	<-k.done
	u, ok := k.r.(core.Unreactor)
	if !k.on || !ok || k.kept.Load() {
		return
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackTimeout)
	defer cancel()
	if err := u.Unreact(c, k.thread, k.msgID, k.emoji); err != nil {
		k.log.Debug("taking back the acknowledgement reaction", "emoji", k.emoji, "err", err)
	}
}

// latestUserMessage is the newest of the user's messages waiting for the
// answer (after the bot last spoke) that a reaction can be put on: one
// the platform has an id for, neither a chat command, nor deleted, nor a
// button tap (whose id, "tap:…", names no message); nil when there is
// none.
func latestUserMessage(history []core.Message) *core.Message {
	waiting := waitingMessages(history)
	for i := len(waiting) - 1; i >= 0; i-- {
		if m := &waiting[i]; m.PlatformMessageID != "" && !m.Deleted() && !strings.HasPrefix(m.PlatformMessageID, "tap:") {
			return m
		}
	}
	return nil
}

// waitingMessages are the user's messages since the bot last spoke, chat
// commands aside, oldest first: what the turn answers (a slice of
// history).
func waitingMessages(history []core.Message) []core.Message {
	start := len(history)
	for start > 0 {
		m := history[start-1]
		if m.Role == core.RoleAssistant && !isCommandMessage(m) {
			break
		}
		start--
	}
	var out []core.Message
	for _, m := range history[start:] {
		if m.Role == core.RoleUser && !isCommandMessage(m) {
			out = append(out, m)
		}
	}
	return out
}
