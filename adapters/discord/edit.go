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

	"github.com/parleybot/parley/core"
)

// codeUnknownMessage is Discord's JSON error code for a message id that
// does not exist (or no longer does).
const codeUnknownMessage = 10008

// Discord allows 5 edits of messages per 5 s in a channel.
const (
	editsPerWindow = 5
	editWindow     = 5 * time.Second
)

// editGate keeps each channel's edits within Discord's 5 per 5 s, and
// holds a channel's partial updates back after a 429 until its
// retry_after. Times are the adapter's clock.
type editGate struct {
	mu     sync.Mutex
	recent map[string][]time.Time // the channel's edits of the last window
	until  map[string]time.Time   // no partial update before this
	// sweepAt is how many channels are remembered before the idle ones
	// are looked for.
	sweepAt int
}

// minSweep is the fewest channels remembered before a sweep.
const minSweep = 1024

func newEditGate() *editGate {
	return &editGate{recent: map[string][]time.Time{}, until: map[string]time.Time{}, sweepAt: minSweep}
}

// wait is how long from now until channel may have one more request
// (0: now): until a 429's retry_after has passed and, for an edit, until
// the channel's edits of the last window leave room.
func (g *editGate) wait(channel string, now time.Time, edit bool) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var d time.Duration
	if u, ok := g.until[channel]; ok {
		if !u.After(now) {
			delete(g.until, channel)
		} else {
			d = u.Sub(now)
		}
	}
	if !edit {
		return d
	}
	times := g.recent[channel]
	for len(times) > 0 && !times[0].After(now.Add(-editWindow)) {
		times = times[1:]
	}
	if len(times) == 0 {
		delete(g.recent, channel)
		return d
	}
	g.recent[channel] = times
	if len(times) >= editsPerWindow {
		d = max(d, times[len(times)-editsPerWindow].Add(editWindow).Sub(now))
	}
	return d
}

// take records an edit of channel at now. Channels whose edits all left
// the window are forgotten now and then, so that the gate holds only the
// channels edited lately.
func (g *editGate) take(channel string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recent[channel] = append(g.recent[channel], now)
	if len(g.recent) <= g.sweepAt {
		return
	}
	for c, times := range g.recent {
		if !times[len(times)-1].After(now.Add(-editWindow)) {
			delete(g.recent, c)
		}
	}
	for c, u := range g.until {
		if !u.After(now) {
			delete(g.until, c)
		}
	}
	g.sweepAt = max(minSweep, 2*len(g.recent))
}

// holdBack skips channel's partial updates until until.
func (g *editGate) holdBack(channel string, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until.After(g.until[channel]) {
		g.until[channel] = until
	}
}

// editBody is PATCH /channels/{id}/messages/{mid} for a partial update.
type editBody struct {
	Content         string                            `json:"content"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
}

// tryRequest makes one request for a partial update only if it can go
// now, and returns core.ErrStreamBusy otherwise: while the channel is
// held back after a 429, while its edits (edit true) used up Discord's
// window, while discordgo's bucket for the route is in use or exhausted
// (discordgo would block on it), or when the pacer has no slot free
// (TryTake). It is never retried: a 429 holds the channel's partials back
// for its retry_after and is returned.
func (st *state) tryRequest(ctx context.Context, s *discordgo.Session, method, endpoint, bucketID, channel string, edit bool, body any) ([]byte, error) {
	const what = "updating a growing discord reply"
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	now := st.clock.Now()
	if st.edits.wait(channel, now, edit) > 0 {
		return nil, core.ErrStreamBusy
	}
	b := s.Ratelimiter.GetBucket(bucketID)
	if !b.TryLock() {
		return nil, core.ErrStreamBusy
	}
	if s.Ratelimiter.GetWaitTime(b, 1) > 0 || !st.tryPace(channel) {
		b.Unlock()
		return nil, core.ErrStreamBusy
	}
	if edit {
		st.edits.take(channel, now)
	}
	b.Remaining--
	// RequestWithLockedBucket releases b; no retries inside discordgo.
	raw, err := s.RequestWithLockedBucket(method, endpoint, "application/json", data, b, 0,
		discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false), discordgo.WithRestRetries(0))
	var limited *discordgo.RateLimitError
	switch {
	case errors.As(err, &limited):
		st.edits.holdBack(channel, st.clock.Now().Add(limited.RetryAfter))
		return nil, fmt.Errorf("%s: rate limited by discord, partial updates of the channel skipped for %s", what, limited.RetryAfter)
	case err != nil:
		return nil, st.requestError(what, err)
	}
	return raw, nil
}

// tryPace takes the pacer's lowest-priority slot for channel, if free now.
func (st *state) tryPace(channel string) bool {
	st.mu.Lock()
	p := st.pacer
	st.mu.Unlock()
	return p.TryTake(channel) // a nil Pacer (not started) paces nothing
}

// editFinal replaces message id's content, and its buttons when
// components are given (nil leaves them), with the retries a send has:
// it waits for its pacer slot (a finished reply), for the channel's edit
// window and for discordgo's bucket, a 429 waits its retry_after.
func (st *state) editFinal(ctx context.Context, s *discordgo.Session, channel, id, content string, components []discordgo.MessageComponent) (*discordgo.Message, error) {
	edit := &discordgo.MessageEdit{Channel: channel, ID: id, Content: &content, AllowedMentions: noPings()}
	if components != nil {
		edit.Components = &components
	}
	return st.editWith(ctx, s, edit)
}

// editWith makes edit as editFinal does.
func (st *state) editWith(ctx context.Context, s *discordgo.Session, edit *discordgo.MessageEdit) (*discordgo.Message, error) {
	const what = "editing discord message"
	channel, id := edit.Channel, edit.ID
	bucket := discordgo.EndpointChannelMessage(channel, "")
	return retrying(ctx, st, s, "", channel, what, []any{"channel_id", channel, "message_id", id}, func(ctx context.Context) (*discordgo.Message, error) {
		for {
			d := st.edits.wait(channel, st.clock.Now(), true)
			if d <= 0 {
				break
			}
			if st.pastDeadline(ctx, d) {
				return nil, waitError{fmt.Errorf("%s: edits rate limited for %s, past the deadline", what, d.Round(time.Millisecond))}
			}
			if !st.sleep(ctx, d) {
				return nil, waitError{fmt.Errorf("%s: %w", what, ctx.Err())}
			}
		}
		if err := st.waitBucket(ctx, s, bucket, what); err != nil {
			return nil, waitError{err}
		}
		st.edits.take(channel, st.clock.Now())
		m, err := s.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		var limited *discordgo.RateLimitError
		if errors.As(err, &limited) {
			st.edits.holdBack(channel, st.clock.Now().Add(limited.RetryAfter))
		}
		return m, err
	})
}

// deleteMessage deletes message id, with a send's retries (not paced: it
// creates nothing). A message already gone is not an error.
func (st *state) deleteMessage(ctx context.Context, s *discordgo.Session, channel, id string) error {
	const what = "deleting discord message"
	bucket := discordgo.EndpointChannelMessage(channel, "")
	_, err := retrying(ctx, st, s, bucket, "", what, []any{"channel_id", channel, "message_id", id}, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.ChannelMessageDelete(channel, id, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	})
	if err != nil && !unknownMessage(err) {
		return err
	}
	return nil
}

// unknownMessage reports whether err is Discord's 404 Unknown Message.
func unknownMessage(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusNotFound &&
		re.Message != nil && re.Message.Code == codeUnknownMessage
}

// EditMessage replaces the text of the bot's message id in the DM channel
// msg.ChannelThreadID with msg.Text, rendered as Send renders it; text
// past the first part Send would send is left out (the caller sends it).
// msg.Choices become the message's buttons when the text is one part (the
// buttons go on a message's last part). It is paced and retried like a
// send; an unknown message is a *core.PermanentError.
func (sm *streamer) EditMessage(ctx context.Context, id string, msg core.OutboundMessage) error {
	s, err := (&sender{sm.state}).sendable(ctx, msg, "editing discord message")
	if err != nil {
		return err
	}
	if !isSnowflake(id) {
		return &core.PermanentError{Reason: fmt.Sprintf("message id %q is not a discord message id", id)}
	}
	bodies := textBodies(msg)
	if len(bodies) == 0 {
		return &core.PermanentError{Reason: "empty text"}
	}
	ctx, cancel := context.WithTimeout(ctx, sm.sendTimeout)
	defer cancel()
	var components []discordgo.MessageComponent
	if len(bodies) == 1 {
		components = choiceComponents(msg.Choices)
	}
	_, err = sm.editFinal(ctx, s, msg.ChannelThreadID, id, bodies[0].Content, components)
	return err
}

// DeleteMessage deletes the bot's message id in the DM channel
// channelThreadID; one already deleted (Unknown Message) is not an error.
func (sm *streamer) DeleteMessage(ctx context.Context, channelThreadID, id string) error {
	s, err := (&sender{sm.state}).sendable(ctx, core.OutboundMessage{ChannelThreadID: channelThreadID}, "deleting discord message")
	if err != nil {
		return err
	}
	if !isSnowflake(id) {
		return &core.PermanentError{Reason: fmt.Sprintf("message id %q is not a discord message id", id)}
	}
	ctx, cancel := context.WithTimeout(ctx, sm.sendTimeout)
	defer cancel()
	return sm.deleteMessage(ctx, s, channelThreadID, id)
}
