package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// HandleInbound records a direct message and plans a turn to answer it; a
// chat command is answered at once, without the model. It implements
// InboundHandler.
func (e *Engine) HandleInbound(ctx context.Context, msg core.InboundMessage) error {
	log := e.log.With("platform", msg.Platform, "thread", msg.ChannelThreadID)
	if !msg.Direct {
		log.Debug("ignoring a message that is not a direct message")
		return nil
	}
	text, meta := storable(msg)
	if strings.TrimSpace(text) == "" && len(msg.Attachments) == 0 {
		log.Debug("ignoring an empty message")
		return nil
	}
	if msg.Platform == "" || msg.ChannelThreadID == "" {
		return errors.New("inbound message without platform or channel thread id")
	}
	if ok, err := e.door.admitted(ctx, log, msg, text, meta); !ok || err != nil {
		return err
	}
	if e.cfg.Commands != nil && len(msg.Attachments) == 0 && e.cfg.Commands.IsCommand(text) {
		return e.handleCommand(ctx, log, msg, text)
	}
	_, err := e.take(ctx, log, msg, core.InboundRecord{Text: text, Metadata: meta})
	return err
}

// take stores msg as in (its text and metadata, or the choice it answers,
// set) under the per-user limits, plans the turn that answers it and
// starts it at once where it can. It returns what the store recorded;
// nothing, with no error, for a redelivery.
func (e *Engine) take(ctx context.Context, log *slog.Logger, msg core.InboundMessage, in core.InboundRecord) (core.InboundResult, error) {
	now := e.cfg.Clock.Now().UTC()
	hold, err := e.checkInbound(ctx, msg.Platform, msg.ChannelThreadID, msg.ChannelUserID, now)
	if err != nil {
		return core.InboundResult{}, fmt.Errorf("checking per-user limits: %w", err)
	}
	if hold != nil {
		in.Metadata = hold.metadata(in.Metadata)
	}
	in.Now, in.PlanRun, in.RunAfter, in.WhileRunning = now, hold == nil, now.Add(e.cfg.Debounce), e.cfg.DuringGeneration
	reserved := false
	if in.PlanRun && e.cfg.Debounce <= 0 && e.cfg.Handoff != nil {
		if _, ok := e.cfg.Outbox.Adapter(msg.Platform); ok {
			in.ClaimFor, reserved = e.cfg.Handoff.ReserveTurn()
		}
	}
	res, stored, err := e.record(ctx, log, msg, in)
	if reserved {
		if claimed := res.Run; stored && err == nil && claimed != nil &&
			claimed.Status == core.RunRunning && claimed.Owner == in.ClaimFor {
			log.Debug("inbound message stored, its turn started", "conversation", res.Conversation.ID, "seq", res.Message.Seq, "run", claimed.ID)
			e.cfg.Handoff.RunClaimed(claimed, res.Conversation)
			return res, nil
		}
		e.cfg.Handoff.ReleaseTurn()
	}
	if err != nil || !stored {
		return core.InboundResult{}, err
	}
	log.Debug("inbound message stored", "conversation", res.Conversation.ID, "seq", res.Message.Seq)
	if hold != nil {
		e.held(ctx, log, hold, res, now)
		return res, nil
	}
	switch {
	case res.Rejected:
		e.sendBusyNotice(ctx, res.Conversation)
		return res, nil
	case res.Running != nil && res.Running.CancelRequestedAt != nil:
		// restart: the turn being generated is dropped; the planned run
		// answers everything once it is gone. A run of another process
		// stops at its next heartbeat.
		if e.stopRun(res.Running.ID) {
			log.Debug("restarting the turn for a newer message", "run", res.Running.ID)
		}
	}
	e.signal()
	return res, nil
}

// record stores in, msg's message with its sender and address filled in,
// and adds it to the history. stored is false, with no error, when this
// or another replica stored it already (a redelivery).
func (e *Engine) record(ctx context.Context, log *slog.Logger, msg core.InboundMessage, in core.InboundRecord) (res core.InboundResult, stored bool, err error) {
	in.Platform, in.ChannelThreadID, in.ChannelUserID = msg.Platform, msg.ChannelThreadID, msg.ChannelUserID
	in.DisplayName = core.StorableText(msg.DisplayName)
	in.TimeZone = e.cfg.Location.String()
	in.PlatformMessageID = msg.PlatformMessageID
	in.SessionGap = e.cfg.Session.Gap
	res, err = e.cfg.Store.RecordInbound(ctx, in)
	if errors.Is(err, core.ErrDuplicateInbound) {
		// Already stored (and a message's turn planned, a command
		// answered) by this or another replica.
		log.Debug("a redelivered message was already stored", "platform_message_id", msg.PlatformMessageID)
		return res, false, nil
	}
	if err != nil {
		what := "inbound message"
		if in.Source == core.SourceCommand {
			what = "command"
		}
		return res, false, fmt.Errorf("recording %s: %w", what, err)
	}
	e.cfg.Outbox.Appended(res.Conversation, res.Message)
	return res, true, nil
}

// storable is msg's text as the store keeps it, cut to MaxInboundBytes,
// and the metadata that says so, with the attachments' descriptions (the
// bytes stay on the platform until a turn opens them).
func storable(msg core.InboundMessage) (string, map[string]any) {
	text := core.StorableText(msg.Text)
	var meta map[string]any
	if len(text) > core.MaxInboundBytes {
		meta = map[string]any{"truncated_from_bytes": len(text)}
		text = truncateUTF8(text, core.MaxInboundBytes)
	}
	if len(msg.Attachments) > 0 {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["attachments"] = cleanAttachments(msg.Attachments)
	}
	return text, meta
}

// sendBusyNotice tells a user whose message was not queued (BusyReject)
// that their last message is still being answered. The notice is stored
// for the record but never shown to the model as its own words.
func (e *Engine) sendBusyNotice(ctx context.Context, conv core.Conversation) {
	if _, ok := e.cfg.Outbox.Adapter(conv.Platform); !ok {
		return
	}
	msg := &core.Message{
		ConversationID:  conv.ID,
		Role:            core.RoleAssistant,
		Content:         e.cfg.BusyMessage,
		Source:          core.SourceSystem,
		SessionRecordID: conv.CurrentRecordID,
		Metadata:        map[string]any{"busy_notice": true},
	}
	if err := e.cfg.Outbox.Notice(ctx, conv, msg, core.FormatText, fmt.Sprintf("busy-%d-%d", conv.ID, conv.LastSeq), "a busy notice"); err != nil {
		e.log.Error("storing busy notice", "conversation", conv.ID, "err", err)
	}
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
func cleanAttachments(in []core.Attachment) []core.Attachment {
	out := make([]core.Attachment, len(in))
	for i, a := range in {
		a.MIME, a.Name, a.Ref, a.Emoji = core.StorableText(a.MIME), core.StorableText(a.Name), core.StorableText(a.Ref), core.StorableText(a.Emoji)
		out[i] = a
	}
	return out
}
