package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/parleybot/parley/core"
)

// command answers a tap on a button a command's answer showed (a
// reminder's cancel in /reminders, /forget all's confirmation), without
// the model: the button must be on a command's answer in the tapper's
// conversation; the tap is stored as a command (once, however often it is
// delivered) and the handler's answer sent and stored like a command's.
// A confirmation takes one answer.
func (b buttons) command(ctx context.Context, log *slog.Logger, msg core.InboundMessage, tapper core.CommandTapper) (core.TapAnswer, error) {
	e := b.e
	stale := core.TapAnswer{Notice: core.NoticeStaleButton}
	conv, err := e.cfg.Store.ConversationByThread(ctx, msg.Platform, msg.ChannelThreadID)
	if errors.Is(err, core.ErrNotFound) {
		return stale, nil
	}
	if err != nil {
		return core.TapAnswer{}, fmt.Errorf("finding the conversation of a command's button: %w", err)
	}
	on, err := e.cfg.Store.MessageByPlatformID(ctx, conv.ID, msg.Tap.MessageID, core.RoleAssistant)
	if errors.Is(err, core.ErrNotFound) {
		log.Info("a tap on a command's button that is not on this conversation's message", "message_id", msg.Tap.MessageID)
		return stale, nil
	}
	if err != nil {
		return core.TapAnswer{}, fmt.Errorf("finding the message of a command's button: %w", err)
	}
	choice := -1
	buttons := core.MessageChoices(on)
	for i, c := range buttons {
		if c.Data == msg.Tap.Data {
			choice = i
		}
	}
	if on.Source != core.SourceCommand || choice < 0 {
		log.Info("a tap on a command's button its message does not show", "message", on.ID)
		return stale, nil
	}
	in := core.InboundRecord{Text: buttons[choice].Label, Source: core.SourceCommand,
		Metadata: map[string]any{"command": "tap", "tapped": msg.Tap.Data}}
	if on.Metadata[core.OneAnswerKey] == true {
		in.Answers, in.Choice, in.ChoiceData = on.ID, choice, msg.Tap.Data
	}
	if msg.Tap.ID != "" {
		msg.PlatformMessageID = "tap:" + msg.Tap.ID
	}
	in.Now = e.cfg.Clock.Now().UTC()
	res, stored, err := e.record(ctx, log, msg, in)
	switch {
	case errors.Is(err, core.ErrAlreadyAnswered):
		return core.TapAnswer{Notice: core.NoticeAlreadyAnswered}, nil
	case errors.Is(err, core.ErrStaleChoice):
		return stale, nil
	case err != nil:
		return core.TapAnswer{}, err
	case !stored:
		return core.TapAnswer{}, nil // delivered again: answered the first time
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	tap, err := tapper.TapCommand(ctx, res.Conversation, msg.Tap.Data)
	if err == nil && tap.Reply.Text == "" {
		return tapAnswer(on, buttons[choice].Label, tap.Notice), nil
	}
	if err := e.answerCommand(ctx, log, res, "tap", tap.Reply, err); err != nil {
		return core.TapAnswer{}, err
	}
	if err != nil {
		return core.TapAnswer{Notice: core.DefaultCommandFailure}, nil
	}
	return tapAnswer(on, buttons[choice].Label, tap.Notice), nil
}

// tapAnswer acknowledges a command's button: a confirmation's buttons
// close on its answer; a listing's stay, each working on its own.
func tapAnswer(on core.Message, label, notice string) core.TapAnswer {
	if on.Metadata[core.OneAnswerKey] == true {
		return core.TapAnswer{Chosen: label, Notice: notice}
	}
	return core.TapAnswer{Notice: notice}
}
