package discordtest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakelimit"
	"github.com/parleybot/parley/adapters/internal/fakewait"
)

// Option configures a Server.
type Option func(*Server)

// WithToken sets the bot token the server accepts (default
// "TEST.discord.token"). REST calls must carry "Authorization: Bot <token>"
// and the gateway IDENTIFY/RESUME the same token; anything else is refused.
func WithToken(token string) Option {
	return func(s *Server) { s.token = token }
}

// WithBotUser sets the bot's own user, returned by GET /users/@me, sent in
// READY and used as the author of its messages (default id
// "900000000000000001", username "parley-test").
func WithBotUser(id, username string) Option {
	return func(s *Server) {
		s.bot.ID = id
		s.bot.Username = username
	}
}

// WithHeartbeatInterval sets the heartbeat_interval announced in HELLO
// (default 41.25s, Discord's usual value).
func WithHeartbeatInterval(d time.Duration) Option {
	return func(s *Server) { s.heartbeat = d }
}

// WithNow sets the clock that dates messages and SentMessage.At (default
// time.Now).
func WithNow(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// WithEchoOwnMessages makes the gateway dispatch a MESSAGE_CREATE for every
// message the bot creates over REST, as real Discord does; off by default,
// so that a test sees only the events it injected.
func WithEchoOwnMessages() Option {
	return func(s *Server) { s.echo = true }
}

// WithStrictIntents makes the gateway honour the intents of IDENTIFY like
// Discord: DM message events need DIRECT_MESSAGES (1<<12), guild message
// events GUILD_MESSAGES (1<<9), and guild message content is blanked
// without MESSAGE_CONTENT (1<<15) unless the bot wrote or is mentioned in
// it. Off by default: every identified session gets every event.
func WithStrictIntents() Option {
	return func(s *Server) { s.strictIntents = true }
}

// WithChannelRateLimit limits each channel's POST /channels/{id}/messages
// the way Discord's per-route limits have worked since they became a
// leaky bucket: up to burst messages at once, then one more every every
// (Discord's 5 per 5 s is burst 5, every time.Second). A message over the
// limit creates nothing and is answered 429 as RateLimitNext answers,
// retry_after being the time until the channel takes one more. Time is
// WithNow's clock, so a test that drives the bot's clock drives the limit
// too. Off by default (burst or every 0).
func WithChannelRateLimit(burst int, every time.Duration) Option {
	return func(s *Server) { s.chanLimit = fakelimit.Buckets{Burst: burst, Every: every} }
}

// WithSessionStartLimit sets the gateway session starts GET /gateway/bot
// reports: total a day and remaining now (default 1000 and 999). Each
// IDENTIFY takes one from remaining, as on Discord.
func WithSessionStartLimit(total, remaining int) Option {
	return func(s *Server) { s.startsTotal, s.startsLeft = total, remaining }
}

// User is a Discord user that a test plays.
type User struct {
	ID         string
	Username   string
	GlobalName string
}

// SentMessage is one message the bot created with POST
// /channels/{id}/messages.
type SentMessage struct {
	ChannelID string
	MessageID string
	// Content is the content exactly as the bot sent it.
	Content string
	// Embeds are the message's embeds, in order.
	Embeds []Embed
	// Nonce is the nonce as sent (a JSON number in its decimal form), ""
	// if none.
	Nonce        string
	EnforceNonce bool
	// ReplyTo is message_reference.message_id, "" if not a reply.
	ReplyTo string
	At      time.Time
}

// Channel types of the Discord API.
const (
	channelGuildText = 0
	channelDM        = 1
)

// channel is what the fake knows about one channel.
type channel struct {
	id        string
	typ       int
	guildID   string
	recipient string // the user of a DM channel
}

// inbound is a message a test injected, kept for edits.
type inbound struct {
	channelID string
	at        time.Time
}

// Server is a fake Discord REST API and gateway. All methods are safe for
// concurrent use.
type Server struct {
	token         string
	bot           User
	heartbeat     time.Duration
	now           func() time.Time
	echo          bool
	strictIntents bool
	// chanLimit is WithChannelRateLimit's limit, a bucket per channel.
	chanLimit fakelimit.Buckets
	// startsTotal and startsLeft are WithSessionStartLimit's.
	startsTotal, startsLeft int

	srv       *httptest.Server
	client    *http.Client  // rewrites discord.com to srv
	done      chan struct{} // closed on close; releases waiters
	closeOnce sync.Once
	wg        sync.WaitGroup // gateway connection goroutines

	mu sync.Mutex
	// changed is closed and replaced whenever the state changes, so
	// waiters wake without polling.
	changed  chan struct{}
	closed   bool
	nextID   uint64
	channels map[string]*channel
	dmOf     map[string]string // user id → DM channel id
	users    map[string]User
	blocked  map[string]bool
	inbound  map[string]inbound
	sent     []SentMessage
	sentIdx  map[string][]int
	nonces   map[string]map[string]int // channel → nonce → index in sent
	typing   map[string]int
	calls    map[string]int
	faults   map[string][]fault
	// markupFaults are RefuseMarkupAfter's pass counts, in order.
	markupFaults []int
	// rateLimited counts the 429s answered.
	rateLimited int
	// files are the attachments and stickers served, by URL path.
	files     map[string]storedFile
	downloads []Download

	nextSession int
	sessions    map[string]*gwSession
	conns       map[*gwConn]struct{}
	identifies  int
	resumes     int
	heartbeats  int
	intents     int
}

// NewServer starts a fake Discord. It is closed in t.Cleanup, which drops
// every gateway connection and waits for their goroutines; close discordgo
// sessions first (register their Cleanup after NewServer), or they will
// try to reconnect.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		token:       "TEST.discord.token",
		bot:         User{ID: "900000000000000001", Username: "parley-test"},
		heartbeat:   41250 * time.Millisecond,
		startsTotal: 1000,
		startsLeft:  999,
		now:         time.Now,
		done:        make(chan struct{}),
		changed:     make(chan struct{}),
		nextID:      1300000000000000000,
		channels:    map[string]*channel{},
		dmOf:        map[string]string{},
		users:       map[string]User{},
		blocked:     map[string]bool{},
		inbound:     map[string]inbound{},
		sentIdx:     map[string][]int{},
		nonces:      map[string]map[string]int{},
		typing:      map[string]int{},
		calls:       map[string]int{},
		faults:      map[string][]fault{},
		files:       map[string]storedFile{},
		sessions:    map[string]*gwSession{},
		conns:       map[*gwConn]struct{}{},
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.client = newRewriteClient(s.srv.URL)
	t.Cleanup(s.Close)
	return s
}

// Close drops every gateway connection, waits for their goroutines and
// shuts the server. NewServer registers it with t.Cleanup; calling it
// earlier is allowed and later calls do nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		conns := make([]*gwConn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			_ = c.ws.UnderlyingConn().Close()
		}
		s.wg.Wait()
		s.srv.Close()
		s.client.CloseIdleConnections()
	})
}

// URL returns the server's origin, e.g. "http://127.0.0.1:41234". REST is
// under /api/v9/, the gateway at /gateway.
func (s *Server) URL() string { return s.srv.URL }

// GatewayURL returns the websocket URL that GET /api/v9/gateway announces.
func (s *Server) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gateway"
}

// Token returns the token the server accepts.
func (s *Server) Token() string { return s.token }

// BotID returns the bot's user id.
func (s *Server) BotID() string { return s.bot.ID }

// notify wakes every waiter. Callers hold s.mu.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// newIDLocked returns a fresh snowflake-like id, larger than every earlier
// one. Callers hold s.mu.
func (s *Server) newIDLocked() string {
	s.nextID++
	return strconv.FormatUint(s.nextID, 10)
}

// waitFor waits until cond (called with s.mu held) is true, failing t after
// timeout or when the server closes. what describes the wait for the
// failure message.
func (s *Server) waitFor(t testing.TB, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	fakewait.Until(t, "discordtest", &s.mu, func() <-chan struct{} { return s.changed }, s.done, timeout, cond, what)
}

// Sent returns the messages the bot created in channelID, in order.
func (s *Server) Sent(channelID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sentToLocked(channelID)
}

func (s *Server) sentToLocked(channelID string) []SentMessage {
	idx := s.sentIdx[channelID]
	out := make([]SentMessage, 0, len(idx))
	for _, i := range idx {
		out = append(out, s.sent[i])
	}
	return out
}

// AllSent returns every message the bot created, in order.
func (s *Server) AllSent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// WaitSent waits until the bot has created at least n messages in
// channelID and returns them all; after timeout it fails the test (call it
// from the test goroutine) with what did arrive.
func (s *Server) WaitSent(t testing.TB, channelID string, n int, timeout time.Duration) []SentMessage {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return len(s.sentIdx[channelID]) >= n },
		func() string {
			got := s.Sent(channelID)
			return fmtWant(n, channelID, got)
		})
	return s.Sent(channelID)
}

// Typing returns how many typing indicators the bot triggered in
// channelID.
func (s *Server) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}

// Calls returns how many REST requests of route arrived, refused and
// failed ones included. Routes: "gateway" (GET /gateway), "gateway.bot",
// "users.me", "users.channels" (POST /users/@me/channels), "channels.get"
// (GET /channels/{id}), "messages" (POST /channels/{id}/messages),
// "typing", "cdn" (GET of an attachment or sticker file) and "unknown"
// (anything else).
func (s *Server) Calls(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// DMChannelOf returns the id of the DM channel with userID, "" if none
// was opened yet.
func (s *Server) DMChannelOf(userID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dmOf[userID]
}

// AddGuildChannel makes a guild text channel known, so the bot can send to
// it before any event came from it.
func (s *Server) AddGuildChannel(guildID, channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guildChannelLocked(guildID, channelID)
}

// guildChannelLocked registers a guild channel if it is new. Callers hold
// s.mu.
func (s *Server) guildChannelLocked(guildID, channelID string) *channel {
	ch, ok := s.channels[channelID]
	if !ok {
		ch = &channel{id: channelID, typ: channelGuildText, guildID: guildID}
		s.channels[channelID] = ch
	}
	return ch
}

// dmChannelLocked returns the DM channel with u, opening it on first use.
// Callers hold s.mu.
func (s *Server) dmChannelLocked(userID string) *channel {
	if id, ok := s.dmOf[userID]; ok {
		return s.channels[id]
	}
	ch := &channel{id: s.newIDLocked(), typ: channelDM, recipient: userID}
	s.channels[ch.id] = ch
	s.dmOf[userID] = ch.id
	return ch
}

// userLocked returns what the fake knows about userID. Callers hold s.mu.
func (s *Server) userLocked(userID string) User {
	if u, ok := s.users[userID]; ok {
		return u
	}
	if userID == s.bot.ID {
		return s.bot
	}
	return User{ID: userID, Username: "user" + userID}
}
