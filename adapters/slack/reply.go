package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackutilsx"

	"github.com/parleybot/parley/core"
)

// reply is one reply growing in a DM (core.Stream): streamed with
// chat.startStream and chat.appendStream, or posted and updated with
// chat.update, each part rendered and split as Send does. A streamed text
// that starts over or outgrows one message goes on by edits (a stream
// can only grow). Finish updates every grown message to the part Send
// would have posted there (the stream showed Slack's Markdown, not Send's
// mrkdwn); Abandon deletes them (README, "Replies that grow").
type reply struct {
	g       *growth
	msg     core.OutboundMessage
	channel string

	mu   sync.Mutex
	mode string // modeStream, or modeEdits once it grows by edits
	msgs []grown
	// open: msgs[0] is a stream not yet stopped, given appended so far.
	open     bool
	appended string
	// gap spaces partials once a reply paced for streaming went on by
	// edits; last is the last partial's time.
	gap  time.Duration
	last time.Time
	done bool
}

// grown is a message the reply grew: its ts and the text it shows as
// Send posts it ("" while that is a stream's markdown).
type grown struct{ ts, shown string }

// Update shows text, the whole reply so far, skipping it (with
// core.ErrStreamBusy) when no pacer slot is free now or Slack's 429 has
// not passed.
func (r *reply) Update(ctx context.Context, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return errors.New("updating a slack reply: already finished or abandoned")
	}
	api, err := r.g.live()
	if err != nil {
		return fmt.Errorf("updating a slack reply: %w", err)
	}
	if r.gap > 0 && r.g.clock.Now().Sub(r.last) < r.gap {
		return core.ErrStreamBusy
	}
	if r.mode == modeStream {
		if streamed, err := r.stream(ctx, api, text); streamed || err != nil {
			return err
		}
	}
	return r.edit(ctx, api, text)
}

// posts are text's parts as Send would post them in the reply's DM,
// without buttons: a question's show when it is finished.
func (r *reply) posts(text string) []post {
	r.msg.Text, r.msg.Choices = text, nil
	return textPosts(r.msg)
}

// settled is text up to and including its last space: the word being
// written, which the core may end with a marker it closed for the
// partial, waits, for the stream only ever appends.
func settled(text string) string {
	return text[:strings.LastIndexFunc(text, unicode.IsSpace)+1]
}

// stream shows text with the stream methods; false when the reply must go
// on by edits instead. & < > are escaped as Send escapes them, so that
// nothing pings anyone.
func (r *reply) stream(ctx context.Context, api *slack.Client, text string) (bool, error) {
	md := slackutilsx.EscapeMessage(settled(text))
	switch {
	case len(r.posts(text)) > 1, r.open && !strings.HasPrefix(md, r.appended):
		r.toEdits()
		return false, nil
	case strings.TrimSpace(md) == "" || md == r.appended:
		return true, nil
	case r.open:
		var raw error
		err := r.g.partial(ctx, r.channel, func(ctx context.Context) error {
			_, _, raw = api.AppendStreamContext(ctx, r.channel, r.msgs[0].ts, slack.MsgOptionMarkdownText(md[len(r.appended):]))
			return raw
		})
		if errorCode(raw) == "message_not_in_streaming_state" {
			// Slack ended the stream (appends stopped for too long).
			r.open = false
			r.toEdits()
			return false, nil
		}
		if err == nil {
			r.appended, r.last = md, r.g.clock.Now()
		}
		return true, err
	}
	var ts string
	var raw error
	err := r.g.partial(ctx, r.channel, func(ctx context.Context) error {
		_, ts, raw = api.StartStreamContext(ctx, r.channel, slack.MsgOptionMarkdownText(md))
		return raw
	})
	switch {
	case refusesStreams(raw):
		r.g.decide(modeEdits, "the workspace refused chat.startStream: "+errorCode(raw))
		r.toEdits()
		return false, nil
	case err != nil:
		return true, err
	}
	r.g.decide(modeStream, "the workspace took chat.startStream")
	r.msgs, r.open, r.appended, r.last = []grown{{ts: ts}}, true, md, r.g.clock.Now()
	return true, nil
}

// toEdits makes a streamed reply go on by edits (the next edit stops an
// open stream).
func (r *reply) toEdits() {
	r.mode, r.gap = modeEdits, editInterval
	if len(r.msgs) > 0 {
		r.msgs[0].shown = ""
	}
}

// edit shows text by edits: each part as Send would post it, a new part
// posted, a changed one updated; an open stream is stopped first.
func (r *reply) edit(ctx context.Context, api *slack.Client, text string) error {
	if r.open {
		err := r.g.partial(ctx, r.channel, func(ctx context.Context) error {
			return stopCall(ctx, api, r.channel, r.msgs[0].ts)
		})
		if err != nil {
			return err
		}
		r.open = false
	}
	for i, p := range r.posts(text) {
		if i < len(r.msgs) && r.msgs[i].shown == p.text {
			continue
		}
		var ts string
		err := r.g.partial(ctx, r.channel, func(ctx context.Context) error {
			if i < len(r.msgs) {
				return updateCall(ctx, api, r.channel, r.msgs[i].ts, p.opts)
			}
			var err error
			_, ts, err = api.PostMessageContext(ctx, r.channel, p.opts...)
			return err
		})
		if err != nil {
			return err
		}
		if i == len(r.msgs) {
			r.msgs = append(r.msgs, grown{ts: ts})
		}
		r.msgs[i].shown, r.last = p.text, r.g.clock.Now()
	}
	return nil
}

// Finish shows msg, the finished reply, in the grown messages as Send
// would have posted it, with Send's pacing and retries; a reply that
// never grew is sent with Send.
func (r *reply) Finish(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return core.SendResult{}, errors.New("finishing a slack reply: already finished or abandoned")
	}
	r.done = true
	if len(r.msgs) == 0 {
		return r.g.Send(ctx, msg)
	}
	api, err := r.g.live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("finishing a slack reply: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.g.sendTimeout)
	defer cancel()
	posts := textPosts(msg)
	if len(posts) == 0 {
		return core.SendResult{}, errors.Join(&core.PermanentError{Reason: "empty text"}, r.takeBack(ctx, api))
	}
	if r.open {
		if err := r.g.stopStream(ctx, api, r.channel, r.msgs[0].ts); err != nil {
			return core.SendResult{}, err
		}
		r.open = false
	}
	var ids []string
	for i, p := range posts {
		var more []string
		var err error
		switch {
		case i < len(r.msgs) && r.msgs[i].shown == p.text && !p.buttons:
			more = []string{r.msgs[i].ts}
		case i < len(r.msgs):
			more, err = r.g.replace(ctx, api, r.channel, r.msgs[i].ts, p)
			if errorCode(err) != "message_not_found" {
				break
			}
			// Deleted meanwhile (by the user, or an admin): the part is
			// posted as Send would post it.
			fallthrough
		default:
			var res core.SendResult
			res, err = r.g.post(ctx, api, r.channel, posts[i:i+1])
			more = res.PlatformMessageIDs
		}
		ids = append(ids, more...)
		if err != nil {
			return core.SendResult{PlatformMessageIDs: ids}, fmt.Errorf("part %d of %d: %w", i+1, len(posts), err)
		}
	}
	for _, m := range r.msgs[min(len(posts), len(r.msgs)):] {
		// The reply is delivered: a grown message left over shows stale
		// text, which is not worth sending the reply again.
		if err := r.g.deleteMessage(ctx, api, r.channel, m.ts); err != nil {
			r.g.log.Warn("could not delete a grown slack message past the finished reply", "channel", r.channel, "ts", m.ts, "error", err)
		}
	}
	return core.SendResult{PlatformMessageIDs: ids}, nil
}

// Abandon deletes what grew.
func (r *reply) Abandon(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || len(r.msgs) == 0 {
		r.done = true
		return nil
	}
	r.done = true
	api, err := r.g.live()
	if err != nil {
		return fmt.Errorf("abandoning a slack reply: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.g.sendTimeout)
	defer cancel()
	return r.takeBack(ctx, api)
}

// takeBack deletes every grown message, stopping an open stream first.
func (r *reply) takeBack(ctx context.Context, api *slack.Client) error {
	var errs []error
	if r.open {
		if err := r.g.stopStream(ctx, api, r.channel, r.msgs[0].ts); err != nil {
			errs = append(errs, err)
		}
		r.open = false
	}
	for _, m := range r.msgs {
		if err := r.g.deleteMessage(ctx, api, r.channel, m.ts); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Grown lists the ts of the messages the reply made so far.
func (r *reply) Grown() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, len(r.msgs))
	for i, m := range r.msgs {
		ids[i] = m.ts
	}
	return ids
}
