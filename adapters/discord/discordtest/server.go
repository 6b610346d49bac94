package discordtest

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakehold"
	"github.com/parleybot/parley/adapters/internal/fakelimit"
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
	// Content is the content the message shows now, exactly as the bot
	// sent it: created with it, or edited to it last.
	Content string
	// Embeds are the message's embeds, in order.
	Embeds []Embed
	// Components are the message's buttons as the user sees them now, row
	// by row (action rows of buttons): as created, or as an edit or an
	// interaction's UPDATE_MESSAGE left them. Buttons lists them flat.
	Components [][]Button
	// Nonce is the nonce as sent (a JSON number in its decimal form), ""
	// if none.
	Nonce        string
	EnforceNonce bool
	// ReplyTo is message_reference.message_id, "" if not a reply.
	ReplyTo string
	// Attachments are the files sent with the message, in order; Flags
	// its flags (1<<13: a voice message).
	Attachments []SentAttachment
	Flags       int
	At          time.Time
	// Edits are the message's edits (PATCH), in order; EditedAt is its
	// edited_timestamp (zero: never edited).
	Edits    []Edit
	EditedAt time.Time
	// Deleted is set once the bot deleted the message, at DeletedAt.
	Deleted   bool
	DeletedAt time.Time
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
//
// It composes one part per area of Discord, each holding a pointer to
// the shared state; embedding promotes the parts' methods, which are the
// Server's API.
type Server struct {
	*state
	*delivery
	*restAPI       // routes REST requests; gateway discovery, the bot user
	*directory     // users and channels, DMs
	*chatAPI       // messages created, typing
	*views         // what a user sees of them now
	*faultInjector // rate limits, failures, refused markup, blocked users
	*fileStore     // attachments, voice messages, stickers; the CDN
	*eventFeed     // messages users send and edit
	*gatewayServer // the gateway websocket and its sessions
}

// NewServer starts a fake Discord. It is closed in t.Cleanup, which drops
// every gateway connection and waits for their goroutines; close discordgo
// sessions first (register their Cleanup after NewServer), or they will
// try to reconnect.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	st := &state{
		token:              "TEST.discord.token",
		bot:                User{ID: "900000000000000001", Username: "parley-test"},
		heartbeat:          41250 * time.Millisecond,
		startsTotal:        1000,
		startsLeft:         999,
		now:                time.Now,
		done:               make(chan struct{}),
		changed:            make(chan struct{}),
		nextID:             1300000000000000000,
		channels:           map[string]*channel{},
		dmOf:               map[string]string{},
		users:              map[string]User{},
		blocked:            map[string]bool{},
		inbound:            map[string]inbound{},
		reactions:          map[string][]string{},
		sentIdx:            map[string][]int{},
		msgIdx:             map[string]int{},
		editTimes:          map[string][]time.Time{},
		editLimit:          defaultEditsPerWindow,
		editWindow:         defaultEditWindow,
		interactionTimeout: defaultInteractionTimeout,
		interactions:       map[string]*storedInteraction{},
		nonces:             map[string]map[string]int{},
		typing:             map[string]int{},
		calls:              map[string]int{},
		faults:             map[string][]fault{},
		lost:               map[string]int{},
		files:              map[string]storedFile{},
		sessions:           map[string]*gwSession{},
		conns:              map[*gwConn]struct{}{},
	}
	st.holds = fakehold.New(func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.notify()
	}, st.done)
	s := newServer(st)
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.client = newRewriteClient(s.srv.URL)
	t.Cleanup(s.Close)
	return s
}

// newServer puts the parts together over st.
func newServer(st *state) *Server {
	d := &delivery{st}
	s := &Server{
		state:         st,
		delivery:      d,
		directory:     &directory{st},
		chatAPI:       &chatAPI{st, d},
		views:         &views{st},
		faultInjector: &faultInjector{st},
		fileStore:     &fileStore{st, d},
		eventFeed:     &eventFeed{st, d},
		gatewayServer: &gatewayServer{st, d},
	}
	s.restAPI = &restAPI{state: st, gateway: s.gatewayServer, dir: s.directory, chat: s.chatAPI, store: s.fileStore}
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

// Token returns the token the server accepts.
func (s *Server) Token() string { return s.token }

// BotID returns the bot's user id.
func (s *Server) BotID() string { return s.bot.ID }
