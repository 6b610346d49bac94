package discordtest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakehold"
	"github.com/parleybot/parley/adapters/internal/fakelimit"
	"github.com/parleybot/parley/adapters/internal/fakewait"
)

// state is the fake Discord that every part of the Server reads and
// changes, under mu.
type state struct {
	// holds are answers held after the call acted (HoldAnswers).
	holds         *fakehold.Holds
	token         string
	bot           User
	heartbeat     time.Duration
	now           func() time.Time
	echo          bool
	strictIntents bool
	// chanLimit is WithChannelRateLimit's limit, a bucket per channel.
	chanLimit fakelimit.Buckets
	// editLimit edits per editWindow per channel (WithEditRateLimit).
	editLimit  int
	editWindow time.Duration
	// interactionTimeout is how long a tap takes its first callback.
	interactionTimeout time.Duration
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
	// reactions are the bot's reactions on users' messages, by message id.
	reactions map[string][]string
	sent      []SentMessage
	sentIdx   map[string][]int
	msgIdx    map[string]int // message id → index in sent
	// editTimes are the times of each channel's recent edits.
	editTimes map[string][]time.Time
	nonces    map[string]map[string]int // channel → nonce → index in sent
	typing    map[string]int
	calls     map[string]int
	faults    map[string][]fault
	lost      map[string]int // LoseNextAnswer's, per route
	// markupFaults are RefuseMarkupAfter's pass counts, in order.
	markupFaults []int
	// rateLimited counts the 429s answered.
	rateLimited int
	// files are the attachments and stickers served, by URL path.
	files     map[string]storedFile
	downloads []Download
	// urlKey signs attachment URLs; urlValid holds the signatures that
	// still serve; urlLife is how long a new one does (cdnurls.go).
	urlKey   []byte
	urlValid map[string]bool
	urlLife  time.Duration
	// interactions are the taps, by id, and their ids in order.
	interactions     map[string]*storedInteraction
	interactionOrder []string

	nextSession int
	sessions    map[string]*gwSession
	conns       map[*gwConn]struct{}
	identifies  int
	resumes     int
	heartbeats  int
	intents     int
}

// GatewayURL returns the websocket URL that GET /api/v9/gateway announces.
func (s *state) GatewayURL() string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gateway"
}

// notify wakes every waiter. Callers hold s.mu.
func (s *state) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// newIDLocked returns a fresh snowflake-like id, larger than every earlier
// one. Callers hold s.mu.
func (s *state) newIDLocked() string {
	s.nextID++
	return strconv.FormatUint(s.nextID, 10)
}

// waitFor waits until cond (called with s.mu held) is true, failing t after
// timeout or when the server closes. what describes the wait for the
// failure message.
func (s *state) waitFor(t testing.TB, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	fakewait.Until(t, "discordtest", &s.mu, func() <-chan struct{} { return s.changed }, s.done, timeout, cond, what)
}

// guildChannelLocked registers a guild channel if it is new. Callers hold
// s.mu.
func (s *state) guildChannelLocked(guildID, channelID string) *channel {
	ch, ok := s.channels[channelID]
	if !ok {
		ch = &channel{id: channelID, typ: channelGuildText, guildID: guildID}
		s.channels[channelID] = ch
	}
	return ch
}

// dmChannelLocked returns the DM channel with u, opening it on first use.
// Callers hold s.mu.
func (s *state) dmChannelLocked(userID string) *channel {
	if id, ok := s.dmOf[userID]; ok {
		return s.channels[id]
	}
	ch := &channel{id: s.newIDLocked(), typ: channelDM, recipient: userID}
	s.channels[ch.id] = ch
	s.dmOf[userID] = ch.id
	return ch
}

// userLocked returns what the fake knows about userID. Callers hold s.mu.
func (s *state) userLocked(userID string) User {
	if u, ok := s.users[userID]; ok {
		return u
	}
	if userID == s.bot.ID {
		return s.bot
	}
	return User{ID: userID, Username: "user" + userID}
}
