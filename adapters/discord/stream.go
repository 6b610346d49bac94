package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/discord/nonce"
	"github.com/parleybot/parley/core"
)

// The values of adapters.discord.streaming.
const (
	// streamingAuto is the platform's best way: edits, on Discord.
	streamingAuto  = "auto"
	streamingEdits = "edits"
	streamingOff   = "off"
)

// streamMinInterval is the least time between two updates of one reply:
// Discord allows 5 edits per 5 s in a channel.
const streamMinInterval = time.Second

// streamer grows replies by editing a message (core.Streamer) and edits or
// deletes the bot's messages (core.MessageEditor).
type streamer struct{ *state }

// StreamCapabilities reports replies grown by edits ("", when
// adapters.discord.streaming is off), at most one update a second.
func (sm *streamer) StreamCapabilities() core.StreamCapabilities {
	mode := "edits"
	if sm.cfg.Streaming == streamingOff {
		mode = ""
	}
	return core.StreamCapabilities{Mode: mode, MinInterval: streamMinInterval}
}

// Stream prepares a reply in the DM channel msg.ChannelThreadID that grows
// by edits: the first Update creates a message with the first words (with
// the nonce the reply's first part has in Send), later ones edit it. It
// fails when streaming is off, so that the core sends the reply whole.
func (sm *streamer) Stream(ctx context.Context, msg core.OutboundMessage) (core.Stream, error) {
	if sm.cfg.Streaming == streamingOff {
		return nil, errors.New("discord adapter: streaming is off (adapters.discord.streaming)")
	}
	sd := &sender{sm.state}
	s, err := sd.sendable(ctx, msg, "starting a growing discord reply")
	if err != nil {
		return nil, err
	}
	key := msg.IdempotencyKey
	if key == "" {
		key = nonce.RandomKey()
	}
	return &stream{sd: sd, s: s, channel: msg.ChannelThreadID, format: msg.Format, key: key}, nil
}

// grownMessage is a message a stream created, with the content Discord
// has for it.
type grownMessage struct{ id, content string }

// stream is one reply growing in a channel. Its messages are Send's parts
// of the text so far: part i is message i, created with Send's nonce for
// part i, so that a create repeated (a lost answer, a resend after a
// crash) returns the message Discord already has.
type stream struct {
	sd      *sender
	s       *discordgo.Session
	channel string
	format  core.TextFormat
	key     string

	// mu makes the calls one at a time (the core never overlaps them,
	// Grown aside) and guards grown and ended.
	mu    sync.Mutex
	grown []grownMessage
	ended bool
	// ids are the grown messages' ids, for Grown during a call.
	idsMu sync.Mutex
	ids   []string
}

// errEnded is the error of a call after Finish or Abandon.
var errEnded = errors.New("the growing discord reply has already ended")

// Update shows text, the reply so far, rendered and split as Send would:
// each part that differs from its message is edited (the growing last
// one, or the one before when the text just passed 2000 characters and
// it gets its final cut), and a part with no message yet is created. Each
// request takes the pacer's lowest-priority slot and keeps to the
// channel's edit limit; one that cannot go now ends the update with
// core.ErrStreamBusy (a later update carries the text). Nothing is
// retried.
func (r *stream) Update(ctx context.Context, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return fmt.Errorf("updating discord reply: %w", errEnded)
	}
	for i, body := range textBodies(core.OutboundMessage{Text: text, Format: r.format}) {
		var err error
		switch {
		case i >= len(r.grown):
			err = r.createPartial(ctx, i, body)
		case r.grown[i].content != body.Content:
			err = r.editPartial(ctx, i, body.Content)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// createPartial creates the message of part i with body.
func (r *stream) createPartial(ctx context.Context, i int, body *messageBody) error {
	body.Nonce, body.EnforceNonce, body.AllowedMentions = nonce.For(r.key, i), true, noPings()
	endpoint := discordgo.EndpointChannelMessages(r.channel)
	raw, err := r.sd.tryRequest(ctx, r.s, http.MethodPost, endpoint, endpoint, r.channel, false, body)
	if err != nil {
		return err
	}
	var m discordgo.Message
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return errors.New("updating a growing discord reply: no message in the answer")
	}
	// A nonce already used answers with the message as it is: a later
	// update edits it if it shows something else.
	content := body.Content
	if !sameText(m.Content, body.Content) {
		content = m.Content
	}
	r.grown = append(r.grown, grownMessage{id: m.ID, content: content})
	r.idsMu.Lock()
	r.ids = append(r.ids, m.ID)
	r.idsMu.Unlock()
	return nil
}

// editPartial edits the message of part i to content.
func (r *stream) editPartial(ctx context.Context, i int, content string) error {
	g := &r.grown[i]
	endpoint := discordgo.EndpointChannelMessage(r.channel, g.id)
	bucket := discordgo.EndpointChannelMessage(r.channel, "")
	body := editBody{Content: content, AllowedMentions: noPings()}
	if _, err := r.sd.tryRequest(ctx, r.s, http.MethodPatch, endpoint, bucket, r.channel, true, body); err != nil {
		return err
	}
	g.content = content
	return nil
}

// Finish shows msg, the finished reply, as Send's parts: each grown
// message whose content differs is edited to its part, with a send's
// pacing and retries; the parts past what grew are sent as Send sends
// them, and messages past the last part are deleted. A message Discord
// refuses to edit (its markup, or it is gone) is replaced: it and the
// messages after it are deleted and the rest of the reply is sent anew.
// msg.Choices are buttons on the last part, as Send puts them (an edit
// adds them to a grown message). A reply that never grew is sent with
// Send.
func (r *stream) Finish(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return core.SendResult{}, fmt.Errorf("finishing discord reply: %w", errEnded)
	}
	r.ended = true
	msg.ChannelThreadID, msg.IdempotencyKey = r.channel, r.key
	if len(r.grown) == 0 {
		return r.sd.Send(ctx, msg)
	}
	ctx, cancel := context.WithTimeout(ctx, r.sd.sendTimeout)
	defer cancel()
	bodies := withChoices(textBodies(msg), msg.Choices)
	if len(bodies) == 0 {
		return core.SendResult{}, errors.Join(&core.PermanentError{Reason: "empty text"}, r.deleteFrom(ctx, 0))
	}
	ids, err := r.finishParts(ctx, bodies)
	if err != nil {
		return core.SendResult{PlatformMessageIDs: ids}, err
	}
	if err := r.deleteFrom(ctx, len(bodies)); err != nil {
		// The reply is whole; a leftover of its growth stays.
		r.sd.log.Warn("a message a discord reply grew past its finished parts is left", "channel_id", r.channel, "err", err)
	}
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// finishParts brings the grown messages to bodies and sends the rest.
func (r *stream) finishParts(ctx context.Context, bodies []*messageBody) ([]string, error) {
	ids := make([]string, 0, len(bodies))
	for i, body := range bodies {
		if i >= len(r.grown) {
			more, err := r.sd.deliverFrom(ctx, r.s, r.channel, r.key, bodies, i)
			return append(ids, more...), err
		}
		g := r.grown[i]
		// A grown message has no buttons: the last part's are added.
		if g.content == body.Content && body.Components == nil {
			ids = append(ids, g.id)
			continue
		}
		_, err := r.sd.editFinal(ctx, r.s, r.channel, g.id, body.Content, body.Components)
		if err == nil {
			r.grown[i].content = body.Content
			ids = append(ids, g.id)
			continue
		}
		if _, refused := invalidFormBody(err); !refused && !unknownMessage(err) {
			if len(bodies) > 1 {
				err = fmt.Errorf("part %d of %d: %w", i+1, len(bodies), err)
			}
			return ids, err
		}
		r.sd.log.Warn("discord refused the final edit of a grown reply; sending the rest anew",
			"channel_id", r.channel, "part", i+1, "parts", len(bodies), "err", err)
		if err := r.deleteFrom(ctx, i); err != nil {
			return ids, err
		}
		// Nonces of their own: the grown messages' are taken.
		more, err := r.sd.deliverFrom(ctx, r.s, r.channel, r.key+"/f", bodies, i)
		return append(ids, more...), err
	}
	return ids, nil
}

// deleteFrom deletes the grown messages from index from on.
func (r *stream) deleteFrom(ctx context.Context, from int) error {
	var errs []error
	for _, g := range r.grown[min(from, len(r.grown)):] {
		if err := r.sd.deleteMessage(ctx, r.s, r.channel, g.id); err != nil {
			errs = append(errs, err)
		}
	}
	r.grown = r.grown[:min(from, len(r.grown))]
	return errors.Join(errs...)
}

// Abandon deletes the messages the reply grew.
func (r *stream) Abandon(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return fmt.Errorf("abandoning discord reply: %w", errEnded)
	}
	r.ended = true
	ctx, cancel := context.WithTimeout(ctx, r.sd.sendTimeout)
	defer cancel()
	if err := r.deleteFrom(ctx, 0); err != nil {
		return fmt.Errorf("abandoning discord reply: %w", err)
	}
	return nil
}

// Grown lists the messages the reply created so far, in order.
func (r *stream) Grown() []string {
	r.idsMu.Lock()
	defer r.idsMu.Unlock()
	return append([]string(nil), r.ids...)
}
