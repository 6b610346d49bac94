package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"
)

// commandTimeout bounds running one command and sending its answer. The
// adapter's own deadline (Slack's ack budget) does not cut the answer
// short once the command is stored.
const commandTimeout = 30 * time.Second

// Commands lists the chat commands this dispatcher answers; none when
// commands are off. Adapters read it as Host.Commands.
func (d *Dispatcher) Commands() []CommandInfo {
	if d.cfg.Commands == nil {
		return nil
	}
	return d.cfg.Commands.Commands()
}

// handleCommand stores a chat command without planning a run, answers it
// through the conversation's adapter and stores the answer: both are in
// the transcript the model reads later, neither is a user turn. A run
// already queued for the conversation stays queued; it answers the user's
// earlier messages later.
func (d *Dispatcher) handleCommand(ctx context.Context, log *slog.Logger, msg InboundMessage, text string) error {
	name := CommandName(text)
	now := d.cfg.Clock.Now().UTC()
	res, err := d.cfg.Store.RecordInbound(ctx, InboundRecord{
		Platform:          msg.Platform,
		ChannelThreadID:   msg.ChannelThreadID,
		ChannelUserID:     msg.ChannelUserID,
		DisplayName:       storableText(msg.DisplayName),
		TimeZone:          d.cfg.Location.String(),
		Text:              text,
		PlatformMessageID: msg.PlatformMessageID,
		Metadata:          map[string]any{"command": name},
		Source:            SourceCommand,
		Now:               now,
		SessionGap:        d.limits.Gap,
	})
	if errors.Is(err, ErrDuplicateInbound) {
		// Answered already, by this or another replica.
		log.Debug("a redelivered command was already stored", "platform_message_id", msg.PlatformMessageID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording command: %w", err)
	}
	conv := res.Conversation
	d.history.appended(conv, res.Message)
	log = log.With("conversation", conv.ID, "command", name)

	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	reply, err := d.runCommand(ctx, conv, text)
	meta := map[string]any{"command": name}
	maps.Copy(meta, reply.Metadata)
	if err != nil {
		log.Error("chat command failed", "err", err)
		reply.Text = DefaultCommandFailure
		meta["command_failed"] = true
	}
	answer := &Message{
		ConversationID: conv.ID,
		Role:           RoleAssistant,
		Content:        reply.Text,
		Source:         SourceCommand,
		// The record the command was in, even when the command ended it
		// (/new): the answer closes that record, the next message opens one.
		SessionRecordID: res.Message.SessionRecordID,
		Metadata:        meta,
		CreatedAt:       now,
	}
	if a, ok := d.adapters[conv.Platform]; ok {
		sent, err := d.send(ctx, a, OutboundMessage{
			ConversationID:  conv.ID,
			ChannelThreadID: conv.ChannelThreadID,
			ChannelUserID:   conv.ChannelUserID,
			Text:            answer.Content,
			Format:          FormatRichText,
			IdempotencyKey:  fmt.Sprintf("command-%d", res.Message.ID),
		})
		if len(sent.PlatformMessageIDs) > 0 {
			answer.PlatformMessageID = sent.PlatformMessageIDs[0]
			if len(sent.PlatformMessageIDs) > 1 {
				meta["platform_message_ids"] = sent.PlatformMessageIDs
			}
		}
		if err != nil {
			log.Warn("sending a command's answer", "err", err)
			meta["undelivered"] = err.Error()
		}
	}
	if err := d.cfg.Store.AppendMessage(ctx, answer); err != nil {
		return fmt.Errorf("storing the answer to /%s: %w", name, err)
	}
	d.history.appended(conv, *answer)
	return nil
}

// runCommand runs the command through the handler, with metadata when it
// can give some.
func (d *Dispatcher) runCommand(ctx context.Context, conv Conversation, text string) (CommandReply, error) {
	if r, ok := d.cfg.Commands.(CommandReplier); ok {
		return r.Reply(ctx, conv, text)
	}
	reply, err := d.cfg.Commands.Run(ctx, conv, text)
	return CommandReply{Text: reply}, err
}
