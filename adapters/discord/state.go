package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
)

// state is what the adapter's parts share: the config, the logger and
// clock, the retry policy, the running session and the connection's
// health.
type state struct {
	// cfg is the decoded config (the Adapter's exported fields).
	cfg *Adapter

	log   *slog.Logger
	clock core.Clock

	// Retry policy; tests shorten it.
	sendTimeout         time.Duration
	maxRateLimitRetries int
	maxServerRetries    int
	serverBackoff       time.Duration
	// resumeDelay is the wait before the first reconnect attempt (0:
	// resume at once, as Discord asks); tests widen the outage with it.
	resumeDelay  time.Duration
	reconnectMin time.Duration
	reconnectMax time.Duration

	// edits keeps the channels' message edits within Discord's limit.
	edits *editGate

	mu        sync.Mutex
	started   bool
	stopped   bool
	session   *discordgo.Session
	pacer     *pace.Pacer
	transport *http.Transport
	conns     *connSet
	handler   core.Host // takes DMs (HandleInbound) and taps (HandleTap)
	runCtx    context.Context
	cancel    context.CancelCauseFunc
	// reconnect wakes the supervisor after a disconnect; supervised is
	// closed when it has returned.
	reconnect  chan struct{}
	supervised chan struct{}
	// wg counts the inbound events being handled.
	wg sync.WaitGroup

	healthMu  sync.Mutex
	botID     string
	connected bool
	downSince time.Time
}

// Health reports an error while the adapter is not running or the gateway
// is disconnected.
func (st *state) Health() error {
	st.mu.Lock()
	running := st.started && !st.stopped && st.session != nil
	st.mu.Unlock()
	if !running {
		return errors.New("discord adapter: not running")
	}
	st.healthMu.Lock()
	defer st.healthMu.Unlock()
	if !st.connected {
		return fmt.Errorf("discord adapter: gateway disconnected since %s", st.downSince.UTC().Format(time.RFC3339))
	}
	return nil
}

// live returns the session while the adapter runs.
func (st *state) live() (*discordgo.Session, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.stopped:
		return nil, errors.New("discord adapter is stopped")
	case st.session == nil:
		return nil, errors.New("discord adapter is not started")
	}
	return st.session, nil
}

// scrub returns err with the bot token replaced (see config.Secret.Scrub);
// classify errors before scrubbing them.
func (st *state) scrub(err error) error { return st.cfg.Token.Scrub(err) }

// pace waits, bounded by ctx, until one more message may go to
// channelID (replies first: background sends wait behind them).
func (st *state) pace(ctx context.Context, channelID string) error {
	st.mu.Lock()
	p := st.pacer
	st.mu.Unlock()
	return p.Wait(ctx, channelID) // a nil Pacer (not started) paces nothing
}

// sleep waits d on the adapter's clock; false when ctx ended first.
func (st *state) sleep(ctx context.Context, d time.Duration) bool {
	return core.Sleep(ctx, st.clock, d)
}
