package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// HandleInbound records a direct message and plans a turn to answer it; a
// chat command is answered at once, without the model. It implements
// InboundHandler.
func (d *Dispatcher) HandleInbound(ctx context.Context, msg InboundMessage) error {
	log := d.log.With("platform", msg.Platform, "thread", msg.ChannelThreadID)
	if !msg.Direct {
		log.Debug("ignoring a message that is not a direct message")
		return nil
	}
	if len(d.allow) > 0 && !d.allow[string(msg.Platform)+":"+msg.ChannelUserID] {
		log.Debug("ignoring a user not in bot.allow_users", "user", msg.ChannelUserID)
		return nil
	}
	text := storableText(msg.Text)
	if strings.TrimSpace(text) == "" && len(msg.Attachments) == 0 {
		log.Debug("ignoring an empty message")
		return nil
	}
	var meta map[string]any
	if len(text) > MaxInboundBytes {
		meta = map[string]any{"truncated_from_bytes": len(text)}
		text = truncateUTF8(text, MaxInboundBytes)
	}
	if len(msg.Attachments) > 0 {
		// Their description only: the bytes stay on the platform until a
		// turn opens them.
		if meta == nil {
			meta = map[string]any{}
		}
		meta["attachments"] = cleanAttachments(msg.Attachments)
	}
	if msg.Platform == "" || msg.ChannelThreadID == "" {
		return errors.New("inbound message without platform or channel thread id")
	}
	if d.cfg.Commands != nil && len(msg.Attachments) == 0 && d.cfg.Commands.IsCommand(text) {
		return d.handleCommand(ctx, log, msg, text)
	}
	now := d.cfg.Clock.Now().UTC()
	hold, err := d.checkInbound(ctx, msg.Platform, msg.ChannelThreadID, msg.ChannelUserID, now)
	if err != nil {
		return fmt.Errorf("checking per-user limits: %w", err)
	}
	if hold != nil {
		meta = hold.metadata(meta)
	}
	res, err := d.cfg.Store.RecordInbound(ctx, InboundRecord{
		Platform:          msg.Platform,
		ChannelThreadID:   msg.ChannelThreadID,
		ChannelUserID:     msg.ChannelUserID,
		DisplayName:       storableText(msg.DisplayName),
		TimeZone:          d.cfg.Location.String(),
		Text:              text,
		PlatformMessageID: msg.PlatformMessageID,
		Metadata:          meta,
		Now:               now,
		PlanRun:           hold == nil,
		RunAfter:          now.Add(d.cfg.Debounce),
		WhileRunning:      d.cfg.DuringGeneration,
		SessionGap:        d.limits.Gap,
	})
	if errors.Is(err, ErrDuplicateInbound) {
		// Already stored, and its turn planned, by this or another replica.
		log.Debug("a redelivered message was already stored", "platform_message_id", msg.PlatformMessageID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording inbound message: %w", err)
	}
	d.history.appended(res.Conversation, res.Message)
	log.Debug("inbound message stored", "conversation", res.Conversation.ID, "seq", res.Message.Seq)
	if hold != nil {
		d.held(ctx, log, hold, res, now)
		return nil
	}
	switch {
	case res.Rejected:
		d.sendBusyNotice(ctx, res.Conversation)
		return nil
	case res.Running != nil && res.Running.CancelRequestedAt != nil:
		// restart: the turn being generated is dropped; the planned run
		// answers everything once it is gone. A run of another process
		// stops at its next heartbeat.
		if d.stopRun(res.Running.ID) {
			log.Debug("restarting the turn for a newer message", "run", res.Running.ID)
		}
	}
	d.signal()
	return nil
}

// sendBusyNotice tells a user whose message was not queued (BusyReject)
// that their last message is still being answered. The notice is stored
// for the record but never shown to the model as its own words.
func (d *Dispatcher) sendBusyNotice(ctx context.Context, conv Conversation) {
	a, ok := d.adapters[conv.Platform]
	if !ok {
		return
	}
	msg := &Message{
		ConversationID:  conv.ID,
		Role:            RoleAssistant,
		Content:         d.cfg.BusyMessage,
		Source:          SourceSystem,
		SessionRecordID: conv.CurrentRecordID,
		Metadata:        map[string]any{"busy_notice": true},
	}
	res, err := d.send(ctx, a, OutboundMessage{
		ConversationID:  conv.ID,
		ChannelThreadID: conv.ChannelThreadID,
		ChannelUserID:   conv.ChannelUserID,
		Text:            msg.Content,
		IdempotencyKey:  fmt.Sprintf("busy-%d-%d", conv.ID, conv.LastSeq),
	})
	if err != nil {
		d.log.Warn("sending busy notice", "conversation", conv.ID, "err", err)
		msg.Metadata["undelivered"] = err.Error()
	}
	if len(res.PlatformMessageIDs) > 0 {
		msg.PlatformMessageID = res.PlatformMessageIDs[0]
	}
	if err := d.cfg.Store.AppendMessage(ctx, msg); err != nil {
		d.log.Error("storing busy notice", "conversation", conv.ID, "err", err)
		return
	}
	d.history.appended(conv, *msg)
}

// truncateUTF8 cuts s to at most n bytes without splitting a rune.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cleanAttachments is what is stored of an inbound message's files: their
// text fields made storable (valid UTF-8, no NUL), like the message's.
func cleanAttachments(in []Attachment) []Attachment {
	out := make([]Attachment, len(in))
	for i, a := range in {
		a.MIME, a.Name, a.Ref, a.Emoji = storableText(a.MIME), storableText(a.Name), storableText(a.Ref), storableText(a.Emoji)
		out[i] = a
	}
	return out
}
