package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// sender pushes the bot's messages and typing to the client's open pages.
type sender struct{ *state }

// Send pushes msg.Text to every open page of the client
// msg.ChannelThreadID and returns one id per part. Rich text
// (core.FormatRichText, Markdown) goes whole, as one message carrying the
// Markdown and its sanitised HTML (markup.HTML): a browser has no length
// limit worth cutting formatting for. Text goes as written, split to
// 16000-rune parts. A client with no page open is not an error: the core
// has stored the message and the page shows it from the history when it
// loads.
func (sd *sender) Send(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	return sd.push(ctx, msg, "")
}

// push is Send, with the first part's id given (a streamed reply's, so
// that the page puts the finished text in place of the growing one) or,
// when firstID is "", a fresh one.
func (sd *sender) push(ctx context.Context, msg core.OutboundMessage, firstID string) (core.SendResult, error) {
	return sd.pushWith(ctx, msg, firstID, nil)
}

// pushWith is push with files under the last part (SendFiles); with
// files, an empty text is one part of its own to carry them.
func (sd *sender) pushWith(ctx context.Context, msg core.OutboundMessage, firstID string, files []wireFile) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending to web client: %w", err)
	}
	if sd.isStopped() {
		return core.SendResult{}, fmt.Errorf("sending to web client: %w", errStopped)
	}
	if msg.ChannelThreadID == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "no channel thread id"}
	}
	parts := textParts(msg)
	if len(parts) == 0 && len(files) > 0 {
		parts = []wireMessage{{}}
	}
	if len(parts) == 0 {
		return core.SendResult{}, &core.PermanentError{Reason: "empty text"}
	}
	at := sd.clock.Now().UTC().Format(time.RFC3339)
	ids := make([]string, len(parts))
	evs := make([]event, len(parts))
	for i, p := range parts {
		ids[i] = firstID
		if i > 0 || firstID == "" {
			ids[i] = sd.nextID()
		}
		p.ID, p.Role, p.At = ids[i], string(core.RoleAssistant), at
		if i == len(parts)-1 && len(msg.Choices) > 0 {
			p.Choices = wireChoices(msg.Choices)
		}
		if i == len(parts)-1 {
			p.Files = files
		}
		data, err := json.Marshal(p)
		if err != nil {
			return core.SendResult{}, fmt.Errorf("encoding web message: %w", err)
		}
		evs[i] = event{name: "message", data: data}
	}
	n := sd.hub.publish(msg.ChannelThreadID, evs, true)
	sd.log.Debug("message pushed", "thread", msg.ChannelThreadID, "parts", len(parts), "pages", n)
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// Typing shows the typing indicator on every open page of the client. It is
// best effort: a page too busy to take the signal just misses it.
func (sd *sender) Typing(_ context.Context, channelThreadID string) error {
	sd.hub.publish(channelThreadID, []event{{name: "typing", data: []byte("{}")}}, false)
	return nil
}

// textParts is msg as the messages to push, without id, role or time.
func textParts(msg core.OutboundMessage) []wireMessage {
	if msg.Format == core.FormatRichText {
		html := markup.HTML(msg.Text)
		if strings.TrimSpace(html) == "" {
			return nil
		}
		return []wireMessage{{Text: msg.Text, HTML: html}}
	}
	var out []wireMessage
	for _, p := range textsplit.Split(msg.Text, maxMessageLength) {
		out = append(out, wireMessage{Text: p})
	}
	return out
}
