package slacktest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/parleybot/parley/adapters/internal/fakelimit"
	"github.com/parleybot/parley/adapters/internal/fakewait"
)

// state is the fake workspace that every part of the Server reads and
// changes, under mu.
type state struct {
	botToken      string
	appToken      string
	signingSecret string
	pingInterval  time.Duration
	ackTimeout    time.Duration
	retryDelay    time.Duration
	echo          bool
	now           func() time.Time
	// chanLimit is WithChannelRateLimit's limit, a bucket per channel
	// (per user for a DM).
	chanLimit fakelimit.Buckets

	srv       *httptest.Server
	client    *http.Client // Events API deliveries, PostEvent, VerifyURL
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{} // closed on Close; releases waiters
	closeOnce sync.Once
	wg        sync.WaitGroup // socket connections and background workers
	httpWake  chan struct{}  // nudges the Events API worker
	ackWake   chan struct{}  // nudges the ack-timeout watcher

	mu sync.Mutex
	// changed is closed and replaced whenever the state changes, so
	// waiters wake without polling.
	changed  chan struct{}
	closed   bool
	revoked  bool
	users    map[string]User
	dmOf     map[string]string // user id → DM channel id
	dmUser   map[string]string // DM channel id → user id
	channels map[string]string // channel id → channel_type
	blocked  map[string]bool
	inbound  map[string]string // channel+"/"+ts → text, for EditDM
	lastTS   int64             // microseconds of the newest ts
	nextDM   int
	sent     []SentMessage
	sentIdx  map[string][]int
	// botMsgs are the bot's messages by channel+"/"+ts, botOrder their ts
	// per channel in the order made; streamRefusal is RefuseStreams' code.
	botMsgs       map[string]*BotMessage
	botOrder      map[string][]string
	streamRefusal string
	calls         map[string]int
	faults        map[string][]*fault
	// markupFaults are RefuseMarkupAfter's pass counts, in order.
	markupFaults []int
	// rateLimited counts the 429s answered.
	rateLimited int
	// files are the shared files, by "<team>-<id>"; noFilesScope makes
	// every download answer the login page.
	files        map[string]*storedFile
	nextFile     int
	noFilesScope bool

	nextEvent   int
	events      map[string]*event
	lastEventID string

	tickets     map[string]bool
	conns       map[*sockConn]struct{}
	connections int
	pending     []*envelope          // waiting for a socket connection
	envelopes   map[string]*envelope // every envelope sent, by id
	badAcks     int

	eventsURL string
	httpQueue []httpItem

	// commandsURL is where slash commands are POSTed ("": Socket Mode).
	commandsURL string
	nextTrigger int

	// interactivityURL is where taps are POSTed ("": Socket Mode);
	// ephemerals are chat.postEphemeral's messages, in order.
	interactivityURL string
	ephemerals       []Ephemeral

	// reactions are every reaction on a message, by channel+"/"+ts, in
	// the order made.
	reactions map[string][]reactionOn
}

func (s *state) addUserLocked(u User) {
	if u.ID == "" {
		panic("slacktest: User.ID is empty")
	}
	old := s.users[u.ID]
	if u.Name == "" {
		u.Name = old.Name
	}
	if u.RealName == "" {
		u.RealName = old.RealName
	}
	if u.DisplayName == "" {
		u.DisplayName = old.DisplayName
	}
	s.users[u.ID] = u
}

// dmLocked returns the DM channel with userID, opening it on first use.
// Callers hold s.mu.
func (s *state) dmLocked(userID string) (id string, existed bool) {
	if id, ok := s.dmOf[userID]; ok {
		return id, true
	}
	s.nextDM++
	id = fmt.Sprintf("D0DM%06d", s.nextDM)
	s.dmOf[userID] = id
	s.dmUser[id] = userID
	s.channels[id] = channelIM
	return id, false
}

// nextTSLocked returns a fresh message ts, "<unix>.<6 digits>", later than
// every earlier one even when the clock stands still. Callers hold s.mu.
func (s *state) nextTSLocked() string {
	us := s.now().UnixMicro()
	if us <= s.lastTS {
		us = s.lastTS + 1
	}
	s.lastTS = us
	return fmt.Sprintf("%d.%06d", us/1_000_000, us%1_000_000)
}

// notify wakes every waiter. Callers hold s.mu.
func (s *state) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor waits until cond (called with s.mu held) is true, failing t after
// timeout or when the server closes. what describes the wait for the
// failure message.
func (s *state) waitFor(t testing.TB, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	fakewait.Until(t, "slacktest", &s.mu, func() <-chan struct{} { return s.changed }, s.done, timeout, cond, what)
}
