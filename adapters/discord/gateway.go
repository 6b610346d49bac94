package discord

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// gateway is the adapter's receiving side: it keeps the gateway
// connection up, tracks its health and hands DMs to the core.
type gateway struct{ *state }

// newSession configures a discordgo session for DMs. runCtx aborts its
// dials when the adapter stops; conns records its connections.
func (g *gateway) newSession(runCtx context.Context, client *http.Client, conns *connSet) *discordgo.Session {
	s, _ := discordgo.New("Bot " + g.cfg.Token.Reveal()) // New never fails for a bot token
	s.Client = client
	s.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 15 * time.Second,
		NetDialContext:   conns.dialer(runCtx),
	}
	// Button taps (INTERACTION_CREATE) need no intent.
	s.Identify.Intents = discordgo.IntentsDirectMessages | discordgo.IntentsDirectMessageReactions
	// discordgo sends the shard with IDENTIFY when there is more than one.
	s.ShardID, s.ShardCount = g.cfg.ShardID, max(g.cfg.ShardCount, 1)
	// discordgo's reconnect loop outlives Close; the adapter's supervisor
	// reconnects instead.
	s.ShouldReconnectOnError = false
	// Send waits out a 429 itself, bounded by its context; discordgo would
	// sleep regardless of the context, any number of times.
	s.ShouldRetryOnRateLimit = false
	// Bounds discordgo's own retries of 502 answers.
	s.MaxRestRetries = 2
	// The adapter needs no cache of guilds and channels.
	s.StateEnabled = false
	// Events are handled in order on the gateway's reading goroutine, so a
	// user's DMs reach the core in the order they were written.
	s.SyncEvents = true
	// discordgo logs through the standard logger, and at debug level prints
	// the IDENTIFY with the token; the adapter logs what matters itself.
	s.LogLevel = -1

	s.AddHandler(g.onReady)
	s.AddHandler(g.onConnect)
	s.AddHandler(g.onResumed)
	s.AddHandler(g.onDisconnect)
	s.AddHandler(g.onMessageCreate)
	s.AddHandler(g.onInteractionCreate)
	s.AddHandler(g.onMessageUpdate)
	s.AddHandler(g.onMessageDelete)
	s.AddHandler(g.onReactionAdd)
	s.AddHandler(g.onReactionRemove)
	return s
}

// open opens the session's gateway connection (a RESUME when the session
// has one to resume). When ctx ends first, the connection being opened is
// closed so that Open, which takes no context, returns.
func (g *gateway) open(ctx context.Context, s *discordgo.Session, conns *connSet) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	stop := context.AfterFunc(ctx, conns.closeAll)
	err := s.Open()
	if !stop() {
		if err == nil {
			_ = s.Close()
		}
		return context.Cause(ctx)
	}
	return err
}

// supervise reopens the gateway after each disconnect, with backoff, until
// ctx ends. It closes done when it returns.
func (g *gateway) supervise(ctx context.Context, s *discordgo.Session, conns *connSet, wake <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		if g.resumeDelay > 0 && !g.sleep(ctx, g.resumeDelay) {
			return
		}
		backoff := g.reconnectMin
		for attempt := 1; ; attempt++ {
			err := g.open(ctx, s, conns)
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
				break // a second disconnect event for one outage
			}
			if err == nil {
				g.log.Info("discord gateway reconnected", "attempt", attempt)
				break
			}
			g.log.Warn("reconnecting to the discord gateway failed", "attempt", attempt, "err", g.scrub(err), "retry_in", backoff)
			if !g.sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, g.reconnectMax)
		}
	}
}

// onReady records the bot's id: messages from it are ignored.
func (g *gateway) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	g.healthMu.Lock()
	defer g.healthMu.Unlock()
	if r.User != nil && r.User.ID != "" {
		g.botID = r.User.ID
	}
	g.connected = true
}

// onConnect runs when the gateway has answered an IDENTIFY or RESUME.
func (g *gateway) onConnect(*discordgo.Session, *discordgo.Connect) { g.setConnected() }

// onResumed runs when Discord resumed the session (and replayed the events
// missed while disconnected).
func (g *gateway) onResumed(*discordgo.Session, *discordgo.Resumed) {
	g.setConnected()
	g.log.Info("discord gateway session resumed")
}

func (g *gateway) setConnected() {
	g.healthMu.Lock()
	g.connected = true
	g.healthMu.Unlock()
}

// onDisconnect marks the gateway down and wakes the supervisor. It runs on
// the goroutine that closed the session, so it must not block.
func (g *gateway) onDisconnect(*discordgo.Session, *discordgo.Disconnect) {
	g.healthMu.Lock()
	if g.connected {
		g.connected = false
		g.downSince = g.clock.Now()
	}
	g.healthMu.Unlock()
	g.mu.Lock()
	stopped, wake := g.stopped, g.reconnect
	g.mu.Unlock()
	if stopped || wake == nil {
		return
	}
	g.log.Warn("discord gateway disconnected; reconnecting")
	select {
	case wake <- struct{}{}:
	default: // a reconnect is already due
	}
}

// connSet tracks the gateway's network connections so that they can be
// closed from outside discordgo: Session.Open takes no context and would
// otherwise wait for ever on a gateway that accepts and never says hello.
type connSet struct {
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func newConnSet() *connSet { return &connSet{conns: map[*trackedConn]struct{}{}} }

// dialer returns a websocket NetDialContext that records its connections
// and gives up when runCtx ends.
func (cs *connSet) dialer(runCtx context.Context) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(runCtx, cancel)()
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, set: cs}
		cs.mu.Lock()
		cs.conns[tc] = struct{}{}
		cs.mu.Unlock()
		return tc, nil
	}
}

// closeAll closes every open connection.
func (cs *connSet) closeAll() {
	cs.mu.Lock()
	conns := make([]*trackedConn, 0, len(cs.conns))
	for c := range cs.conns {
		conns = append(conns, c)
	}
	cs.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// trackedConn leaves its set when closed.
type trackedConn struct {
	net.Conn
	set *connSet
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.set.mu.Lock()
	delete(c.set.conns, c)
	c.set.mu.Unlock()
	return c.Conn.Close()
}
