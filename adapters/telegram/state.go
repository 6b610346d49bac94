package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"

	"github.com/parleybot/parley/adapters/pace"
	"github.com/parleybot/parley/core"
)

// state is what the adapter's parts share: the config, the logger and
// clock, the retry tunables, the running bot and the polling's health.
type state struct {
	// cfg is the decoded config (the Adapter's exported fields).
	cfg *Adapter
	// webhookPath is where the bot's webhook is served (core.WebhookPath).
	webhookPath string

	log   *slog.Logger
	clock core.Clock

	// Retry policy; tests shorten it.
	maxRateLimitRetries int
	maxServerRetries    int
	serverBackoff       time.Duration
	pollBackoffMin      time.Duration
	pollBackoffMax      time.Duration
	unhealthyAfter      int
	// fileTimeout bounds one download attempt (0: defaultFileTimeout).
	fileTimeout time.Duration

	mu        sync.Mutex
	started   bool
	stopped   bool
	bot       *bot.Bot
	pacer     *pace.Pacer
	client    *http.Client
	transport *http.Transport
	botID     int64
	handler   core.Host
	runCtx    context.Context
	cancel    context.CancelFunc
	// wg counts the polling goroutine and webhook requests being handled.
	wg sync.WaitGroup

	healthMu     sync.Mutex
	pollFailures int
	pollLastErr  string
}

// formatted reports whether rich text is shown formatted (format markdown
// or its old name markdownv2).
func (st *state) formatted() bool { return st.cfg.Format != FormatPlain }

// apiURL is the Bot API base URL without a trailing slash.
func (st *state) apiURL() string {
	if st.cfg.APIURL == "" {
		return "https://api.telegram.org"
	}
	return strings.TrimRight(st.cfg.APIURL, "/")
}

// Health reports an error while the adapter is not running or getUpdates
// has failed several times in a row.
func (st *state) Health() error {
	st.mu.Lock()
	running := st.started && !st.stopped && st.bot != nil
	st.mu.Unlock()
	if !running {
		return errors.New("telegram adapter: not running")
	}
	st.healthMu.Lock()
	defer st.healthMu.Unlock()
	if st.cfg.Mode == ModePolling && st.pollFailures >= st.unhealthyAfter {
		return fmt.Errorf("telegram adapter: polling failing: %d getUpdates requests failed in a row, last: %s", st.pollFailures, st.pollLastErr)
	}
	return nil
}

// live returns the bot while the adapter runs.
func (st *state) live() (*bot.Bot, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.stopped:
		return nil, errors.New("telegram adapter is stopped")
	case st.bot == nil:
		return nil, errors.New("telegram adapter is not started")
	}
	return st.bot, nil
}

// sendPacer returns the pacer of message-creating calls (nil, pacing
// nothing, before Start).
func (st *state) sendPacer() *pace.Pacer {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.pacer
}

// scrub returns err with the bot token replaced (see config.Secret.Scrub);
// classify errors before scrubbing them.
func (st *state) scrub(err error) error { return st.cfg.Token.Scrub(err) }

// sleep waits d on the adapter's clock; false when ctx ended first.
func (st *state) sleep(ctx context.Context, d time.Duration) bool {
	return core.Sleep(ctx, st.clock, d)
}
