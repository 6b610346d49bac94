package intake

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/parleybot/parley/core"
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
	conv := res.Conversation
	log = log.With("conversation", conv.ID, "command", name)

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	reply, err := e.runCommand(ctx, conv, text)
	meta := map[string]any{"command": name}
	maps.Copy(meta, reply.Metadata)
	if err != nil {
		log.Error("chat command failed", "err", err)
		reply.Text = core.DefaultCommandFailure
		meta["command_failed"] = true
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
		CreatedAt:       now,
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
