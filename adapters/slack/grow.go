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

// The least time between two updates of one reply: chat.update is Tier 3,
// 50+ a minute (https://api.slack.com/methods/chat.update), and
// chat.appendStream Tier 4, 100+ a minute (its "rate_limits": "t4" in
// Slack's method catalogue), per app per workspace
// (https://api.slack.com/apis/rate-limits). Replies growing at once share
// them: the pacer and a 429's pause keep the rest.
const (
	editInterval   = 1200 * time.Millisecond
	appendInterval = 600 * time.Millisecond
)

// growth makes replies grow while the model writes them (core.Streamer)
// and edits or deletes the bot's messages (core.MessageEditor).
type growth struct {
	*sender

	modeMu sync.Mutex
	// decided is how replies grow in auto mode once a reply found out.
	decided string
	// pausedUntil is when partials may go again after a 429.
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
	how := "slack replies grow by chat.update"
	if mode == modeStream {
		how = "slack replies grow with chat.startStream and chat.appendStream"
	}
	g.log.Info(how, "streaming", g.cfg.Streaming, "why", why)
}

// StreamCapabilities says how replies grow now ("stream" or "edits"; ""
// with streaming off) and the least time between two updates of one
// reply for that way.
func (g *growth) StreamCapabilities() core.StreamCapabilities {
	mode := g.mode()
	return core.StreamCapabilities{Mode: mode, MinInterval: map[string]time.Duration{modeStream: appendInterval, modeEdits: editInterval}[mode]}
}

// Stream prepares a reply that grows in msg's conversation (the DM its
// channel thread or user names, opened if need be). With streaming off it
// fails, and the reply is sent whole.
func (g *growth) Stream(ctx context.Context, msg core.OutboundMessage) (core.Stream, error) {
	mode := g.mode()
	if mode == "" {
		return nil, errors.New("slack adapter: streaming is off (adapters.slack.streaming)")
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

// partial makes one call of a partial update, never retried, in a pacer
// slot free now (else core.ErrStreamBusy). A 429 pauses every partial for
// its Retry-After and is returned wrapping core.ErrStreamBusy.
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

// refusesStreams reports whether chat.startStream's err means the
// workspace, app or token cannot stream at all (invalid_arguments: it
// wants a thread_ts, which a reply in a DM has not).
func refusesStreams(err error) bool {
	switch errorCode(err) {
	case "unknown_method", "not_allowed_token_type", "missing_scope", "method_not_supported_for_channel_type",
		"channel_type_not_supported", "feature_not_enabled", "not_allowed", "invalid_arguments":
		return true
	}
	return false
}
