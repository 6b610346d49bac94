// Package outbox is the one way a message leaves Parley. Turns (replies,
// continuations, failure notices), jobs (scheduled messages) and intake
// (command answers, busy and limit notices) all send through an Outbox:
// it finds the conversation's adapter, renders for what the adapter can
// show (rich text as plain, an image as its link), records a reply before
// sending it, bounds the sends in doubt per platform, counts every send,
// and keeps the history cache up to date. A new way for a message to
// leave (a streamed draft, buttons, a file) is a new operation here.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/history"
)

// Store is what the Outbox records messages with.
type Store interface {
	// AppendMessage appends m with the next seq and sets its ID and Seq.
	AppendMessage(ctx context.Context, m *core.Message) error
}

// Config wires an Outbox; the composer fills in the defaults.
type Config struct {
	Adapters []core.Adapter
	Store    Store
	History  *history.Cache
	Metrics  core.Metrics
	Clock    core.Clock
	Logger   *slog.Logger
	// JobLease and MaxSendsInDoubt are scheduler.job_lease and
	// scheduler.max_sends_in_doubt (see doubt.go).
	JobLease        time.Duration
	MaxSendsInDoubt int
	// Streaming is bot.streaming (stream.go).
	Streaming Streaming
}

// Outbox sends messages out; see the package doc.
type Outbox struct {
	cfg       Config
	log       *slog.Logger
	adapters  map[core.Platform]core.Adapter
	platforms []core.Platform

	mu    sync.Mutex
	doubt map[core.Platform]slots
}

// New returns an Outbox over cfg.Adapters, one per platform.
func New(cfg Config) (*Outbox, error) {
	o := &Outbox{cfg: cfg, log: cfg.Logger, adapters: map[core.Platform]core.Adapter{}, doubt: map[core.Platform]slots{}}
	for _, a := range cfg.Adapters {
		if prev, dup := o.adapters[a.Platform()]; dup {
			return nil, fmt.Errorf("dispatcher: adapters %q and %q both serve platform %s", prev.Name(), a.Name(), a.Platform())
		}
		o.adapters[a.Platform()] = a
		o.platforms = append(o.platforms, a.Platform())
	}
	if len(o.platforms) == 0 {
		return nil, errors.New("dispatcher: no adapter")
	}
	return o, nil
}

// Adapter returns the adapter serving p, if this process has one.
func (o *Outbox) Adapter(p core.Platform) (core.Adapter, bool) {
	a, ok := o.adapters[p]
	return a, ok
}

// Platforms are the platforms this process can deliver to, in the order
// the adapters were given.
func (o *Outbox) Platforms() []core.Platform { return o.platforms }

// Send sends msg through a in the best form a can show, and counts the
// send by platform and result.
func (o *Outbox) Send(ctx context.Context, a core.Adapter, msg core.OutboundMessage) (core.SendResult, error) {
	res, err := render(ctx, a, msg)
	result := "ok"
	switch {
	case core.IsPermanent(err):
		result = "permanent"
	case err != nil:
		result = "error"
	}
	o.cfg.Metrics.Sent(a.Platform(), result)
	return res, err
}

// render sends msg through a: rich text as plain text to an adapter that
// cannot render it, files through a FileSender (a line each saying it
// could not be shown, elsewhere), an image as its caption and URL to one
// that cannot show images.
func render(ctx context.Context, a core.Adapter, msg core.OutboundMessage) (core.SendResult, error) {
	if msg.Format == core.FormatRichText && !a.Capabilities().RichText {
		msg.Text, msg.Format = markup.Plain(msg.Text), core.FormatText
	}
	if len(msg.Choices) > 0 && !a.Capabilities().Choices {
		msg.Text, msg.Choices = NumberedChoices(msg.Text, msg.Choices), nil
	}
	if len(msg.Files) > 0 {
		if fs, ok := a.(core.FileSender); ok {
			return fs.SendFiles(ctx, msg)
		}
		msg.Text, msg.Files = filesNotShown(msg.Text, msg.Files), nil
	}
	if msg.ImageURL == "" {
		return a.Send(ctx, msg)
	}
	if is, ok := a.(core.ImageSender); ok {
		return is.SendImage(ctx, msg)
	}
	msg.Text = strings.TrimSpace(msg.Text + "\n" + msg.ImageURL)
	msg.ImageURL = ""
	return a.Send(ctx, msg)
}

// Replaced tells the history cache a stored message changed.
func (o *Outbox) Replaced(convID int64, m core.Message) {
	o.cfg.History.Replaced(convID, m)
}

// Appended tells the history cache about messages just stored.
func (o *Outbox) Appended(conv core.Conversation, msgs ...core.Message) {
	o.cfg.History.Appended(conv, msgs...)
}

// Notice sends msg, a message no model wrote (what: a command's answer, a
// busy or limit notice), into conv with key, then stores it with the outcome
// (platform ids; "undelivered" and the error when the send failed) and
// adds it to the history. A conversation on a platform this process does
// not serve gets it stored only. It returns the store's error.
func (o *Outbox) Notice(ctx context.Context, conv core.Conversation, msg *core.Message, format core.TextFormat, key, what string) error {
	if msg.Metadata == nil {
		msg.Metadata = map[string]any{}
	}
	if a, ok := o.adapters[conv.Platform]; ok {
		res, err := o.Send(ctx, a, core.OutboundMessage{
			ConversationID:  conv.ID,
			ChannelThreadID: conv.ChannelThreadID,
			ChannelUserID:   conv.ChannelUserID,
			Text:            msg.Content,
			Format:          format,
			IdempotencyKey:  key,
			Choices:         core.MessageChoices(*msg),
			Files:           msg.Files,
		})
		noteIDs(msg, res)
		if err != nil {
			o.log.Warn("sending "+what, "conversation", conv.ID, "err", err)
			msg.Metadata["undelivered"] = err.Error()
		}
	}
	// Sent already: its files' bytes need not be kept for a retry (their
	// description stays in the metadata).
	msg.Files = nil
	// The store's error as it is: the caller says what was stored.
	if err := o.cfg.Store.AppendMessage(ctx, msg); err != nil {
		return err
	}
	o.Appended(conv, *msg)
	return nil
}

// noteIDs keeps the platform's ids of a sent message on it: the first as
// its PlatformMessageID, all of them when it went out in parts.
func noteIDs(msg *core.Message, res core.SendResult) {
	if len(res.PlatformMessageIDs) == 0 {
		return
	}
	msg.PlatformMessageID = res.PlatformMessageIDs[0]
	if len(res.PlatformMessageIDs) > 1 {
		msg.Metadata["platform_message_ids"] = res.PlatformMessageIDs
	}
}
