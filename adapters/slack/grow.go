package slack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/core"
)

// Streaming modes, adapters.slack.streaming.
const (
	// StreamingAuto grows replies with Slack's stream methods, or by
	// edits where the workspace refuses them (the default).
	StreamingAuto = "auto"
	// StreamingEdits grows replies by chat.postMessage then chat.update.
	StreamingEdits = "edits"
	// StreamingOff sends replies whole.
	StreamingOff = "off"
)

// How replies grow, as StreamCapabilities names it.
const (
	modeStream = "stream"
	modeEdits  = "edits"
)

// The least time between two updates of one reply, from Slack's limits
// (docs.slack.dev, "Rate limits"; each method's Facts): chat.update is
// Tier 3, 50+ calls a minute, chat.appendStream Tier 4, 100+ a minute,
// both per app per workspace. One reply alone keeps under them at one
// call per 1.2 s and per 0.6 s; replies growing at once share them, and
// the per-channel pacer and a 429's pause (growth.pause) keep the rest.
const (
	editInterval   = 1200 * time.Millisecond
	appendInterval = 600 * time.Millisecond
)

// growth makes replies grow while the model writes them (core.Streamer)
// and edits or deletes the bot's messages (core.MessageEditor).
type growth struct {
	*sender

	modeMu sync.Mutex
	// decided is how replies grow in auto mode once a reply found out
	// (modeStream or modeEdits; "" before); each decision is logged once.
	decided string
	// pausedUntil is when partial updates may go again after Slack
	// answered one with 429.
	pausedUntil time.Time
}

// mode is how the next reply grows: "" when streaming is off.
func (g *growth) mode() string {
	switch g.cfg.Streaming {
	case StreamingOff:
		return ""
	case StreamingEdits:
		return modeEdits
	}
	g.modeMu.Lock()
	defer g.modeMu.Unlock()
	if g.decided != "" {
		return g.decided
	}
	return modeStream
}

// decide records how replies grow and logs it the first time: stream
// only while nothing was decided, edits for good (a workspace that
// refused the stream methods keeps refusing them).
func (g *growth) decide(mode, why string) {
	g.modeMu.Lock()
	defer g.modeMu.Unlock()
	if g.decided == mode || (mode == modeStream && g.decided != "") {
		return
	}
	g.decided = mode
	if mode == modeStream {
		g.log.Info("slack replies grow with chat.startStream and chat.appendStream", "streaming", g.cfg.Streaming, "why", why)
		return
	}
	g.log.Info("slack replies grow by chat.update", "streaming", g.cfg.Streaming, "why", why)
}

// StreamCapabilities says how replies grow now ("stream" or "edits"; ""
// with streaming off) and the least time between two updates of one
// reply for that way.
func (g *growth) StreamCapabilities() core.StreamCapabilities {
	switch g.mode() {
	case modeStream:
		return core.StreamCapabilities{Mode: modeStream, MinInterval: appendInterval}
	case modeEdits:
		return core.StreamCapabilities{Mode: modeEdits, MinInterval: editInterval}
	}
	return core.StreamCapabilities{}
}

// Stream prepares a reply that grows in msg's conversation (the DM its
// channel thread or user names, opened if need be). With streaming off it
// fails, and the reply is sent whole.
func (g *growth) Stream(ctx context.Context, msg core.OutboundMessage) (core.Stream, error) {
	mode := g.mode()
	if mode == "" {
		return nil, errors.New("slack adapter: streaming is off (adapters.slack.streaming)")
	}
	if _, err := g.live(); err != nil {
		return nil, fmt.Errorf("starting a slack reply: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, g.sendTimeout)
	defer cancel()
	channel, err := g.channelOf(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("starting a slack reply: %w", err)
	}
	if g.cfg.Streaming == StreamingEdits {
		g.decide(modeEdits, "adapters.slack.streaming is edits")
	}
	return &reply{g: g, msg: msg, channel: channel, mode: mode}, nil
}

// partial makes one call of a partial update: it takes a pacer slot
// without waiting (none free: core.ErrStreamBusy) and is never retried.
// A 429 pauses every partial for the Retry-After Slack gives; the call's
// error is returned wrapping core.ErrStreamBusy, so that the caller skips
// to a later update.
func (g *growth) partial(ctx context.Context, channel string, call func(ctx context.Context) error) error {
	g.modeMu.Lock()
	paused := g.clock.Now().Before(g.pausedUntil)
	g.modeMu.Unlock()
	if paused || !g.tryPace(channel) {
		return core.ErrStreamBusy
	}
	err := call(ctx)
	var limited *slack.RateLimitedError
	if errors.As(err, &limited) {
		wait := max(limited.RetryAfter, time.Second)
		g.modeMu.Lock()
		g.pausedUntil = g.clock.Now().Add(wait)
		g.modeMu.Unlock()
		return fmt.Errorf("slack rate-limited a partial reply for %v: %w", wait, core.ErrStreamBusy)
	}
	if err != nil {
		return g.apiError("updating a partial slack reply", err)
	}
	return nil
}

// refusesStreams reports whether err from chat.startStream means the
// workspace, app or token cannot stream at all, rather than that this one
// call failed: the method unknown there, a token or channel type it does
// not take, a scope missing, or arguments (thread_ts) it wants and a DM
// reply does not have.
func refusesStreams(err error) bool {
	switch errorCode(err) {
	case "unknown_method", "not_allowed_token_type", "missing_scope", "method_not_supported_for_channel_type",
		"channel_type_not_supported", "feature_not_enabled", "not_allowed", "invalid_arguments":
		return true
	}
	return false
}
