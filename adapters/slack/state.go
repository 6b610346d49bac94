package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
)

// state is what the adapter's parts share: the config, the logger and
// clock, the tunables, the running Web API client and the connection's
// health.
type state struct {
	// cfg is the decoded config (the Adapter's exported fields).
	cfg *Adapter
	// parleyBot is the Parley bot this adapter belongs to (core.Env.BotID),
	// which places its webhooks (core.WebhookPath).
	parleyBot string

	log   *slog.Logger
	clock core.Clock

	// Tunables; tests shorten them.
	sendTimeout         time.Duration
	maxRateLimitRetries int
	maxServerRetries    int
	serverBackoff       time.Duration
	// ackBudget bounds handing one event to the core before Slack is
	// answered; Slack wants an answer within 3 seconds.
	ackBudget time.Duration
	// pingInterval is how long Socket Mode may go without a ping from
	// Slack before the connection counts as dead (0: slack-go's 30s).
	pingInterval time.Duration
	reconnectMin time.Duration
	reconnectMax time.Duration

	mu        sync.Mutex
	started   bool
	stopped   bool
	api       *slack.Client
	pacer     *pace.Pacer
	transport *http.Transport
	handler   core.Host
	runCtx    context.Context
	cancel    context.CancelCauseFunc
	// socketDone is closed when the Socket Mode loop has returned.
	socketDone chan struct{}
	// wg counts the events being handled.
	wg sync.WaitGroup

	healthMu  sync.Mutex
	botUserID string
	botID     string
	connected bool
	downSince time.Time
	lastErr   string
}

// newAPI builds the Web API client. slack-go's own loggers are silenced:
// the adapter logs through slog only.
func (st *state) newAPI(transport *http.Transport) (*slack.Client, error) {
	opts := []slack.Option{
		slack.OptionHTTPClient(&http.Client{Transport: transport, Timeout: requestTimeout}),
		slack.OptionLog(log.New(io.Discard, "", 0)),
	}
	if st.cfg.APIURL != "" {
		u, err := apiURL(st.cfg.APIURL)
		if err != nil {
			return nil, fmt.Errorf("api_url %w", err)
		}
		opts = append(opts, slack.OptionAPIURL(u))
	}
	if st.cfg.Mode == ModeSocket {
		opts = append(opts, slack.OptionAppLevelToken(st.cfg.AppToken.Reveal()))
	}
	return slack.New(st.cfg.BotToken.Reveal(), opts...), nil
}

// Health reports an error while the adapter is not running or the Socket
// Mode connection is down.
func (st *state) Health() error {
	st.mu.Lock()
	running := st.started && !st.stopped && st.api != nil
	st.mu.Unlock()
	if !running {
		return errors.New("slack adapter: not running")
	}
	st.healthMu.Lock()
	defer st.healthMu.Unlock()
	if !st.connected {
		msg := fmt.Sprintf("slack adapter: socket mode disconnected since %s", st.downSince.UTC().Format(time.RFC3339))
		if st.lastErr != "" {
			msg += ": " + st.lastErr
		}
		return errors.New(msg)
	}
	return nil
}

// setConnected records the connection state for Health.
func (st *state) setConnected(up bool, why string) {
	st.healthMu.Lock()
	defer st.healthMu.Unlock()
	if up {
		st.connected, st.lastErr = true, ""
		return
	}
	if st.connected || st.downSince.IsZero() {
		st.downSince = st.clock.Now()
	}
	st.connected = false
	if why != "" {
		st.lastErr = why
	}
}

// ownIDs returns the bot's user id and bot id from auth.test.
func (st *state) ownIDs() (userID, botID string) {
	st.healthMu.Lock()
	defer st.healthMu.Unlock()
	return st.botUserID, st.botID
}

// live returns the Web API client while the adapter runs.
func (st *state) live() (*slack.Client, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.stopped:
		return nil, errors.New("slack adapter is stopped")
	case st.api == nil:
		return nil, errors.New("slack adapter is not started")
	}
	return st.api, nil
}

// scrub returns err with every secret replaced (see config.Secret.Scrub);
// classify errors before scrubbing them.
func (st *state) scrub(err error) error {
	return st.cfg.SigningSecret.Scrub(st.cfg.AppToken.Scrub(st.cfg.BotToken.Scrub(err)))
}

// pace waits, bounded by ctx, until one more message may go to channel
// (replies first: background sends wait behind them).
func (st *state) pace(ctx context.Context, channel string) error {
	st.mu.Lock()
	p := st.pacer
	st.mu.Unlock()
	return p.Wait(ctx, channel) // a nil Pacer (not started) paces nothing
}

// tryPace takes a partial update's slot to channel, if one is free now
// and no send waits (pace.Pacer.TryTake).
func (st *state) tryPace(channel string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pacer.TryTake(channel)
}

// sleep waits d on the adapter's clock; false when ctx ended first.
func (st *state) sleep(ctx context.Context, d time.Duration) bool {
	return core.Sleep(ctx, st.clock, d)
}
