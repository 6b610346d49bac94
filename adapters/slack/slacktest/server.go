package slacktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakelimit"
)

// Fixed identities of the fake workspace and its bot.
const (
	teamID    = "T0FAKE0001"
	teamName  = "Fake"
	teamURL   = "https://fake.slack.com/"
	appID     = "A0FAKE0001"
	botUserID = "U0BOT00001"
	botID     = "B0BOT00001"
	botName   = "parley"
	// verificationToken is the deprecated token every event_callback
	// carries; clients that verify with signing secrets ignore it.
	verificationToken = "verification-token"
)

// User is a person in the fake workspace.
type User struct {
	ID          string // "U..." (any non-empty string accepted)
	Name        string // username (users.info user.name)
	RealName    string // user.real_name and profile.real_name
	DisplayName string // profile.display_name (may be empty)
}

// Option configures a Server.
type Option func(*Server)

// WithBotToken sets the bot token ("xoxb-…") that the Web API accepts
// (default "xoxb-" and a random suffix).
func WithBotToken(token string) Option {
	return func(s *Server) { s.botToken = token }
}

// WithAppToken sets the app-level token ("xapp-…") that
// apps.connections.open accepts (default "xapp-1-" and a random suffix).
func WithAppToken(token string) Option {
	return func(s *Server) { s.appToken = token }
}

// WithSigningSecret sets the secret that signs Events API requests
// (default 32 random hex digits).
func WithSigningSecret(secret string) Option {
	return func(s *Server) { s.signingSecret = secret }
}

// WithPingInterval sets how often socket connections get a websocket PING
// (default 500ms; the first comes right after connecting). slack-go
// reconnects when no ping arrives within its own
// socketmode.OptionPingInterval (30s by default), so keep this below it;
// 0 or less sends no pings at all, to test that reconnect.
func WithPingInterval(d time.Duration) Option {
	return func(s *Server) { s.pingInterval = d }
}

// WithAckTimeout makes Socket Mode send an envelope again (retry_attempt
// +1, retry_reason "timeout", at most 3 retries) when no ack arrived within
// d (default 0: only a dropped connection causes a redelivery).
func WithAckTimeout(d time.Duration) Option {
	return func(s *Server) { s.ackTimeout = d }
}

// WithRetryDelay sets how long the Events API delivery waits before a
// retry (default 100ms; Slack waits minutes).
func WithRetryDelay(d time.Duration) Option {
	return func(s *Server) { s.retryDelay = d }
}

// WithEchoOwn sets whether a chat.postMessage into a DM also emits the
// bot's own message event, as real Slack does for message.im (default
// true), so that adapters are tested on ignoring it.
func WithEchoOwn(on bool) Option {
	return func(s *Server) { s.echo = on }
}

// WithNow sets the clock for message ts values, event_time and
// SentMessage.At (default time.Now). Request signatures, ack timeouts and
// retries always use real time, as clients compare them with their own.
func WithNow(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// WithChannelRateLimit limits chat.postMessage in each channel as Slack
// does ("1 message per second to a specific channel", with short bursts
// allowed): up to burst posts at once, then one more every every. A post
// over the limit is not posted and is answered as RateLimitNext answers,
// Retry-After being the time until the channel takes one more (whole
// seconds, rounded up). A post to a user id counts against the DM it
// goes to. Time is WithNow's clock, so a test that drives the bot's
// clock drives the limit too. Off by default (burst or every 0).
func WithChannelRateLimit(burst int, every time.Duration) Option {
	return func(s *Server) { s.chanLimit = fakelimit.Buckets{Burst: burst, Every: every} }
}

// Server is a fake Slack: Web API, Socket Mode and Events API delivery.
// All methods are safe for concurrent use.
//
// It composes one part per area of Slack, each holding a pointer to the
// shared state; embedding promotes the parts' methods, which are the
// Server's API.
type Server struct {
	*state
	*delivery
	*webAPI        // auth.test, users, conversations; routes /api/
	*chatAPI       // chat.postMessage and what was sent
	*botMessages   // chat.update, chat.delete, the stream methods; the bot's messages
	*faultInjector // rate limits, failures, revoked tokens, blocked users
	*fileStore     // shared files and their downloads
	*eventFeed     // user messages and other events, their acks
	*eventsAPI     // Events API delivery over HTTP
	*slashCommands // slash commands
	*socketMode    // Socket Mode connections
	*taps          // button taps, chat.postEphemeral
	*reactions     // reactions.add and .remove; users' reactions, deletions, unfurls
	*uploads       // files.getUploadURLExternal, the upload POST, files.completeUploadExternal
}

// NewServer starts a fake Slack on a local httptest server. It is closed
// in t.Cleanup; register the Cleanup that stops your Slack clients after
// calling NewServer, so that it runs first.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := &state{
		botToken:      "xoxb-" + randomHex(12),
		appToken:      "xapp-1-" + randomHex(12),
		signingSecret: randomHex(16),
		pingInterval:  500 * time.Millisecond,
		retryDelay:    100 * time.Millisecond,
		echo:          true,
		now:           time.Now,
		client:        &http.Client{Transport: &http.Transport{}},
		ctx:           ctx,
		cancel:        cancel,
		done:          make(chan struct{}),
		httpWake:      make(chan struct{}, 1),
		ackWake:       make(chan struct{}, 1),
		changed:       make(chan struct{}),
		users:         map[string]User{},
		dmOf:          map[string]string{},
		dmUser:        map[string]string{},
		channels:      map[string]string{},
		blocked:       map[string]bool{},
		inbound:       map[string]string{},
		sentIdx:       map[string][]int{},
		botMsgs:       map[string]*BotMessage{},
		botOrder:      map[string][]string{},
		calls:         map[string]int{},
		faults:        map[string][]*fault{},
		files:         map[string]*storedFile{},
		events:        map[string]*event{},
		tickets:       map[string]bool{},
		conns:         map[*sockConn]struct{}{},
		envelopes:     map[string]*envelope{},
		reactions:     map[string][]reactionOn{},
	}
	s := newServer(st)
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", s.serveAPI)
	mux.HandleFunc("GET /socket", s.serveSocket)
	mux.HandleFunc("GET /files-pri/{file}/download/{name}", s.serveFile)
	mux.HandleFunc("POST /upload/v1/{key}", s.serveUpload)
	s.srv = httptest.NewServer(mux)
	s.wg.Add(1)
	go s.httpWorker()
	if s.ackTimeout > 0 {
		s.wg.Add(1)
		go s.ackWatcher()
	}
	t.Cleanup(s.Close)
	return s
}

// newServer puts the parts together over st.
func newServer(st *state) *Server {
	d := &delivery{st}
	chat := &chatAPI{st, d}
	msgs := &botMessages{st, d}
	tp := &taps{st, d}
	rx := &reactions{st, d}
	up := &uploads{state: st, delivery: d, pending: map[string]*pendingUpload{}, byID: map[string]string{}}
	return &Server{
		state:         st,
		delivery:      d,
		webAPI:        &webAPI{state: st, chat: chat, msgs: msgs, taps: tp, react: rx, files: up},
		chatAPI:       chat,
		botMessages:   msgs,
		faultInjector: &faultInjector{st},
		fileStore:     &fileStore{st, d},
		eventFeed:     &eventFeed{st, d},
		eventsAPI:     &eventsAPI{st, d},
		slashCommands: &slashCommands{st, d},
		socketMode:    &socketMode{st, d},
		taps:          tp,
		reactions:     rx,
		uploads:       up,
	}
}

// Close drops every socket connection, stops the Events API worker and
// the ack-timeout watcher, waits for them and shuts the server down.
// NewServer registers it with t.Cleanup; calling it earlier is allowed and
// later calls do nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		s.cancel()
		conns := s.connsLocked()
		s.notify()
		s.mu.Unlock()
		for _, c := range conns {
			_ = c.ws.UnderlyingConn().Close()
		}
		s.wg.Wait()
		s.srv.Close()
		s.client.CloseIdleConnections()
	})
}

// URL returns the server's origin, e.g. "http://127.0.0.1:41234".
func (s *Server) URL() string { return s.srv.URL }

// APIURL returns the Web API base with its trailing slash, as
// slack.OptionAPIURL wants it: URL() + "/api/".
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// BotToken returns the bot token the Web API accepts.
func (s *Server) BotToken() string { return s.botToken }

// AppToken returns the app-level token apps.connections.open accepts.
func (s *Server) AppToken() string { return s.appToken }

// SigningSecret returns the secret that signs Events API requests.
func (s *Server) SigningSecret() string { return s.signingSecret }

// TeamID returns the workspace id, "T0FAKE0001".
func (s *Server) TeamID() string { return teamID }

// AppID returns the app id, "A0FAKE0001".
func (s *Server) AppID() string { return appID }

// BotUserID returns the bot's user id, "U0BOT00001".
func (s *Server) BotUserID() string { return botUserID }

// BotID returns the bot id, "B0BOT00001" (bot_id of the bot's messages).
func (s *Server) BotID() string { return botID }

// wake nudges a worker without blocking.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, see crypto/rand.Read
	return hex.EncodeToString(b)
}

// newUUID returns a random version-4 UUID, the shape of Slack's envelope
// and client_msg_id values.
func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
