package ircadapter

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

func init() {
	core.RegisterAdapter(core.AdapterInfo{Name: "irc", New: func() core.Adapter { return New() }})
}

// Platform is the platform of IRC conversations.
const Platform core.Platform = "irc"

// Interface guards.
var (
	_ core.Adapter        = (*Adapter)(nil)
	_ core.Provisioner    = (*Adapter)(nil)
	_ core.Validator      = (*Adapter)(nil)
	_ core.HealthReporter = (*Adapter)(nil)
	_ core.PlatformTitler = (*Adapter)(nil)
	_ core.Prober         = (*Adapter)(nil)
)

// Adapter is an IRC client that answers private messages. Create it with
// New; its exported fields are its config (adapters.irc in YAML).
type Adapter struct {
	// Server is the server's host:port, e.g. irc.libera.chat:6697 (required).
	Server string `yaml:"server"`
	// TLS connects over TLS, checking the server's certificate (default false).
	TLS bool `yaml:"tls"`
	// Nick is the bot's nick (default "parley"). When it is taken the bot
	// takes it with "_" appended and asks for it back every minute.
	Nick string `yaml:"nick"`
	// Password is the server password (PASS), or with SASL the account's
	// password (default ""). It is a secret: never logged.
	Password config.Secret `yaml:"password"`
	// SASL logs in with SASL PLAIN as the account Nick with Password before
	// registering, and refuses to connect without it (default false).
	SASL bool `yaml:"sasl"`
	// SendRate paces the lines the bot sends so that the server's flood
	// protection never disconnects it (default 5 at once, then one every 2s:
	// RFC 1459 §8.10).
	SendRate Rate `yaml:"send_rate"`

	log      *slog.Logger
	clock    core.Clock
	realname string
	idPrefix string // keeps synthetic message ids unique across runs
	seq      atomic.Uint64

	// Knobs tests shorten.
	tlsConfig                *tls.Config
	timeout                  time.Duration // dial, registration, one write
	keepalive                time.Duration // silence before the bot PINGs
	backoffMin, backoffMax   time.Duration // between reconnection attempts
	regainEvery, confirmWait time.Duration

	mu          sync.Mutex
	started     bool
	stopped     bool
	conn        *conn         // the registered connection; nil while reconnecting
	connChanged chan struct{} // closed (and replaced) when conn changes
	lastErr     error
	handler     core.InboundHandler
	ctx         context.Context // ends at Stop
	cancel      context.CancelFunc
	stop        chan struct{}
	wg          sync.WaitGroup

	sendSlot chan struct{} // one Send at a time: keeps lines and checks in order
	limiter  *limiter
	inbox    inbox
}

// Rate is the pace of the lines the bot sends.
type Rate struct {
	// PerSecond is lines per second once the burst is spent (default 0.5).
	PerSecond float64 `yaml:"per_second"`
	// Burst is how many lines may go at once (default 5).
	Burst int `yaml:"burst"`
}

// New returns an IRC adapter with its defaults set. It has no side
// effects: nothing connects before Start.
func New() *Adapter {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return &Adapter{
		Nick:        "parley",
		SendRate:    Rate{PerSecond: 0.5, Burst: 5},
		log:         slog.New(slog.DiscardHandler),
		clock:       core.SystemClock{},
		realname:    "Parley",
		idPrefix:    hex.EncodeToString(b[:]),
		timeout:     30 * time.Second,
		keepalive:   2 * time.Minute,
		backoffMin:  time.Second,
		backoffMax:  2 * time.Minute,
		regainEvery: time.Minute,
		confirmWait: 30 * time.Second,
		connChanged: make(chan struct{}),
		stop:        make(chan struct{}),
		sendSlot:    make(chan struct{}, 1),
		inbox:       inbox{wake: make(chan struct{}, 1)},
	}
}

// Name returns "irc".
func (a *Adapter) Name() string { return "irc" }

// Platform returns "irc".
func (a *Adapter) Platform() core.Platform { return Platform }

// Capabilities reports plain text (IRC has no markup, so the core turns
// Markdown into plain text) and no typing indicator or idempotent sends.
// MaxMessageLength is the server's multiline max-bytes when it offers
// IRCv3 draft/multiline, and otherwise one line's room for text.
func (a *Adapter) Capabilities() core.Capabilities {
	a.mu.Lock()
	c := a.conn
	a.mu.Unlock()
	n := lineRoom(a.Nick, "")
	if c != nil {
		n = c.maxMessage()
	}
	return core.Capabilities{MaxMessageLength: n, Markup: "plain"}
}

// PlatformTitle names the platform in a sentence to the model.
func (a *Adapter) PlatformTitle() string { return "IRC" }

// Probe connects and registers as Start does, then quits at once, for
// `parley doctor`: it checks the address, TLS, the password or SASL
// login and the nick, and keeps nothing running.
func (a *Adapter) Probe(ctx context.Context) (string, error) {
	c, err := a.connect(ctx)
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", a.Server, err)
	}
	defer a.wg.Wait() // the connection's reader
	defer c.quit()
	detail := fmt.Sprintf("%s as %s", a.Server, c.currentNick())
	if c.currentNick() != a.Nick {
		detail += fmt.Sprintf(" (%s is in use: is the bot running?)", a.Nick)
	}
	if c.maxMessage() > lineRoom(c.currentNick(), "") {
		detail += ", multiline"
	}
	return detail, nil
}

// Provision takes the logger, clock and bot name from the host.
func (a *Adapter) Provision(_ context.Context, env core.Env) error {
	if env.Logger != nil {
		a.log = env.Logger.With("adapter", "irc")
	}
	if env.Clock != nil {
		a.clock = env.Clock
	}
	if name := strings.TrimSpace(env.BotName); name != "" {
		a.realname = name
	}
	return nil
}

// Validate checks the decoded config.
func (a *Adapter) Validate() error {
	var errs []error
	if host, port, err := net.SplitHostPort(a.Server); err != nil || host == "" || port == "" {
		errs = append(errs, fmt.Errorf("server must be host:port, got %q", a.Server))
	}
	if !validNick(a.Nick) || len(a.Nick) > 30 {
		errs = append(errs, fmt.Errorf("nick %q is not a valid IRC nick (at most 30 characters, no spaces or channel prefix)", a.Nick))
	}
	if a.SASL && a.Password == "" {
		errs = append(errs, errors.New("sasl needs a password"))
	}
	if strings.ContainsAny(a.Password.Reveal(), "\r\n\x00") {
		errs = append(errs, errors.New("password must not contain line breaks or NUL"))
	}
	if !(a.SendRate.PerSecond > 0) || a.SendRate.Burst < 1 {
		errs = append(errs, fmt.Errorf("send_rate needs per_second > 0 and burst >= 1, got %v and %d", a.SendRate.PerSecond, a.SendRate.Burst))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("irc adapter: %w", err)
	}
	return nil
}

// Start connects and registers, then delivers private messages to h. It
// returns once the bot is registered (or with the reason it could not
// be); after that a lost connection is re-established in the background
// with a growing backoff.
func (a *Adapter) Start(ctx context.Context, h core.Host) error {
	if h == nil {
		return errors.New("starting irc adapter: nil inbound handler")
	}
	a.mu.Lock()
	if a.started || a.stopped {
		a.mu.Unlock()
		return errors.New("starting irc adapter: already started or stopped")
	}
	a.started = true
	a.mu.Unlock()

	c, err := a.connect(ctx)
	if err != nil {
		a.mu.Lock()
		a.started = false // Start may be tried again
		a.mu.Unlock()
		return fmt.Errorf("starting irc adapter: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		c.close()
		return errors.New("starting irc adapter: stopped while starting")
	}
	// Background work outlives Start's ctx (often a start-up timeout).
	a.ctx, a.cancel = context.WithCancel(context.WithoutCancel(ctx))
	a.handler = h
	a.limiter = newLimiter(a.SendRate, a.clock)
	a.setConnLocked(c)
	a.wg.Add(2)
	go a.maintain(c)
	go a.deliverInbound()
	return nil
}

// Stop sends QUIT, closes the connection and ends the background work.
// Private messages not yet handed to the core are lost: IRC cannot
// deliver them again.
func (a *Adapter) Stop(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	close(a.stop)
	if a.cancel != nil {
		a.cancel()
	}
	c := a.conn
	a.setConnLocked(nil)
	a.mu.Unlock()
	if c != nil {
		c.quit()
	}
	done := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping irc adapter: %w", ctx.Err())
	}
}

// Health is nil while the bot is registered on the server.
func (a *Adapter) Health() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.conn != nil:
		return nil
	case a.lastErr != nil:
		return fmt.Errorf("not connected: %w", a.lastErr)
	}
	return errors.New("not connected")
}

// setConnLocked installs c (nil: disconnected) and wakes the sends that
// wait for a connection; a.mu is held.
func (a *Adapter) setConnLocked(c *conn) {
	a.conn = c
	close(a.connChanged)
	a.connChanged = make(chan struct{})
}

// currentConn waits for a registered connection.
func (a *Adapter) currentConn(ctx context.Context) (*conn, error) {
	for {
		a.mu.Lock()
		c, changed, stopped := a.conn, a.connChanged, a.stopped
		a.mu.Unlock()
		switch {
		case stopped:
			return nil, errStopped
		case c != nil:
			return c, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the IRC connection: %w", ctx.Err())
		}
	}
}

// maintain watches the connection, asks for the configured nick back
// while the bot has another, and reconnects with a growing, jittered
// backoff when the connection is lost, until Stop.
func (a *Adapter) maintain(c *conn) {
	defer a.wg.Done()
	for {
		regain := a.clock.NewTimer(a.regainEvery)
		select {
		case <-a.stop:
			regain.Stop()
			return
		case <-regain.C():
			if c.currentNick() != a.Nick {
				_ = c.write(line("NICK", a.Nick))
			}
			continue
		case <-c.done:
			regain.Stop()
		}
		a.mu.Lock()
		if a.stopped {
			a.mu.Unlock()
			return
		}
		a.lastErr = c.err()
		a.setConnLocked(nil)
		a.mu.Unlock()
		a.log.Warn("disconnected from the IRC server; reconnecting", "server", a.Server, "err", c.err())
		if c = a.reconnect(); c == nil {
			return // stopped
		}
	}
}

// reconnect connects again until it succeeds (the new connection) or the
// adapter stops (nil).
func (a *Adapter) reconnect() *conn {
	wait := a.backoffMin
	for {
		jittered := time.Duration(float64(wait) * (0.8 + 0.4*mathrand.Float64()))
		t := a.clock.NewTimer(jittered)
		select {
		case <-a.stop:
			t.Stop()
			return nil
		case <-t.C():
		}
		c, err := a.connect(a.ctx)
		if err == nil {
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.stopped {
				c.close()
				return nil
			}
			a.lastErr = nil
			a.setConnLocked(c)
			a.log.Info("reconnected to the IRC server", "server", a.Server, "nick", c.currentNick())
			return c
		}
		a.mu.Lock()
		a.lastErr = err
		a.mu.Unlock()
		wait = min(2*wait, a.backoffMax)
		a.log.Warn("reconnecting to the IRC server failed", "server", a.Server, "err", err, "retry_in", wait)
	}
}

// nextID returns a message id unique across runs: IRC gives messages none.
func (a *Adapter) nextID(kind string) string {
	return fmt.Sprintf("irc-%s-%s%d", a.idPrefix, kind, a.seq.Add(1))
}

// errStopped is returned by sends after Stop.
var errStopped = errors.New("irc adapter stopped")
