package intake

import (
	"context"
	"errors"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
)

// HandleTap records a tap on a question's button as the user's answer
// (core.TapHandler): stored as the user's message, with the choice's
// label as its text, and answered by a turn like any other. A tap the
// record does not back (another conversation's question, a choice the
// question has not, a message that is gone) or on a question answered
// already changes nothing and says so; a tap delivered again is stored
// once.
func (e *Engine) HandleTap(ctx context.Context, msg core.InboundMessage) (core.TapAnswer, error) {
	log := e.log.With("platform", msg.Platform, "thread", msg.ChannelThreadID)
	stale := core.TapAnswer{Notice: core.NoticeStaleButton}
	if msg.Tap == nil || !msg.Direct || msg.Platform == "" || msg.ChannelThreadID == "" {
		return stale, nil
	}
	if !e.door.known(ctx, msg.Platform, msg.ChannelUserID) {
		return stale, nil
	}
	if tapper, ok := e.cfg.Commands.(core.CommandTapper); ok && core.IsCommandData(msg.Tap.Data) {
		return buttons{e}.command(ctx, log, msg, tapper)
	}
	if job, action, ok := outbox.ParseReminderData(msg.Tap.Data); ok {
		return buttons{e}.reminder(ctx, log, msg, job, action)
	}
	question, choice, err := core.ParseChoiceData(msg.Tap.Data)
	if err != nil {
		log.Info("a tap on a button the bot does not know", "err", err)
		return stale, nil
	}
	if msg.Tap.ID != "" {
		msg.PlatformMessageID = "tap:" + msg.Tap.ID
	}
	res, err := e.take(ctx, log, msg, core.InboundRecord{Answers: question, Choice: choice})
	switch {
	case errors.Is(err, core.ErrAlreadyAnswered):
		return core.TapAnswer{Notice: core.NoticeAlreadyAnswered}, nil
	case errors.Is(err, core.ErrStaleChoice):
		log.Info("a tap on a button that is not this conversation's", "question", question, "choice", choice)
		return stale, nil
	case err != nil:
		return core.TapAnswer{}, err
	}
	log.Debug("a choice tapped", "question", question, "choice", choice)
	return core.TapAnswer{Chosen: res.Message.Content}, nil
}
