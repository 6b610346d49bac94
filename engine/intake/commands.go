package intake

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/userdata"
)

// commandTimeout bounds running one command and sending its answer. The
// adapter's own deadline (Slack's ack budget) does not cut the answer
// short once the command is stored.
const commandTimeout = 30 * time.Second

// Commands lists the chat commands intake answers; none when
// commands are off. Adapters read it as Host.Commands.
func (e *Engine) Commands() []core.CommandInfo {
	if e.cfg.Commands == nil {
		return nil
	}
	return e.cfg.Commands.Commands()
}

// handleCommand stores a chat command without planning a run, answers it
// through the conversation's adapter and stores the answer: both are in
// the transcript the model reads later, neither is a user turn. A run
// already queued for the conversation stays queued; it answers the user's
// earlier messages later.
func (e *Engine) handleCommand(ctx context.Context, log *slog.Logger, msg core.InboundMessage, text string) error {
	name := core.CommandName(text)
	now := e.cfg.Clock.Now().UTC()
	res, stored, err := e.record(ctx, log, msg, core.InboundRecord{
		Text:     text,
		Metadata: map[string]any{"command": name},
		Source:   core.SourceCommand,
		Now:      now,
	})
	if err != nil || !stored {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	reply, err := e.runCommand(ctx, res.Conversation, text)
	return e.answerCommand(ctx, log, res, name, reply, err)
}

// answerCommand sends a command's answer (the command failed: err) into
// the conversation of res, the stored command, and stores it: with its
// buttons where the platform shows buttons (elsewhere its text says what
// to type instead).
func (e *Engine) answerCommand(ctx context.Context, log *slog.Logger, res core.InboundResult, name string, reply core.CommandReply, err error) error {
	conv := res.Conversation
	meta := map[string]any{"command": name}
	maps.Copy(meta, reply.Metadata)
	if err != nil {
		log.Error("chat command failed", "conversation", conv.ID, "command", name, "err", err)
		reply = core.CommandReply{Text: core.DefaultCommandFailure}
		meta["command_failed"] = true
	}
	if a, ok := e.cfg.Outbox.Adapter(conv.Platform); ok && a.Capabilities().Choices && len(reply.Choices) > 0 {
		labels, data := make([]string, len(reply.Choices)), make([]string, len(reply.Choices))
		for i, c := range reply.Choices {
			labels[i], data[i] = c.Label, c.Data
		}
		meta[core.ChoicesKey], meta[core.ChoiceDataKey] = labels, data
		if reply.OneAnswer {
			meta[core.OneAnswerKey] = true
		}
	}
	answer := &core.Message{
		ConversationID: conv.ID,
		Role:           core.RoleAssistant,
		Content:        reply.Text,
		Source:         core.SourceCommand,
		// The record the command was in, even when the command ended it
		// (/new): the answer closes that record, the next message opens one.
		SessionRecordID: res.Message.SessionRecordID,
		Metadata:        meta,
		CreatedAt:       e.cfg.Clock.Now().UTC(),
	}
	if len(reply.Files) > 0 {
		answer.AttachFiles(reply.Files)
	}
	if reply.Metadata[userdata.ErasedKey] == true {
		// The conversation is gone with all it held: the answer is sent,
		// never stored, which would make the conversation anew.
		if a, ok := e.cfg.Outbox.Adapter(conv.Platform); ok {
			_, err := e.cfg.Outbox.Send(ctx, a, core.OutboundMessage{ChannelThreadID: conv.ChannelThreadID, ChannelUserID: conv.ChannelUserID,
				Text: reply.Text, Format: core.FormatRichText, IdempotencyKey: fmt.Sprintf("erased-%d", conv.ID)})
			if err != nil {
				log.Warn("telling a user their data is erased", "err", err)
			}
		}
		return nil
	}
	if err := e.cfg.Outbox.Notice(ctx, conv, answer, core.FormatRichText, fmt.Sprintf("command-%d", res.Message.ID), "a command's answer"); err != nil {
		return fmt.Errorf("storing the answer to /%s: %w", name, err)
	}
	return nil
}

// runCommand runs the command through the handler, with metadata when it
// can give some.
func (e *Engine) runCommand(ctx context.Context, conv core.Conversation, text string) (core.CommandReply, error) {
	if r, ok := e.cfg.Commands.(core.CommandReplier); ok {
		return r.Reply(ctx, conv, text)
	}
	reply, err := e.cfg.Commands.Run(ctx, conv, text)
	return core.CommandReply{Text: reply}, err
}
