package telegramtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/parleybot/parley/adapters/internal/fakehold"
)

// state is the fake Bot API's data that every part of the Server reads
// and changes, under mu.
type state struct {
	token string
	bot   models.User
	now   func() time.Time

	srv       *httptest.Server
	whClient  *http.Client
	ctx       context.Context // cancelled on close; bounds webhook deliveries
	cancel    context.CancelFunc
	done      chan struct{} // closed on close; releases held long polls
	closeOnce sync.Once
	wg        sync.WaitGroup // the webhook delivery goroutine

	mu sync.Mutex
	// changed is closed and replaced whenever the state changes, so waiters
	// (long polls, WaitSent) wake without polling.
	changed      chan struct{}
	nextUpdateID int64
	pending      []queuedUpdate
	pollGen      int64
	chats        map[int64]*chatState
	blocked      map[int64]bool
	revoked      bool // every request answers 401, as for a revoked token
	sent         []SentMessage
	sentIdx      map[int64][]int
	// outFiles are the files the bot uploaded, in order.
	outFiles []SentFile
	actions  map[int64][]string
	calls    map[string]int
	faults   map[string][]*scheduledFault
	// markupFaults are RefuseMarkupAfter's pass counts, in order.
	markupFaults []int
	// files are the files users sent, by file_id and by file_path.
	files     map[string]*storedFile
	filePaths map[string]*storedFile
	nextFile  int
	// myCommands are setMyCommands' commands by scope type.
	myCommands map[string][]Command
	// book is the drafts, msgs each message as it is now (edits,
	// deletions), refused the methods refused or flooded.
	book    draftBook
	msgs    messageBook
	refused refusals
	// cb is the taps on the bot's buttons and their answers.
	cb callbackBook
	// botReactions is the bot's reaction on each message that has one.
	botReactions map[msgKey]string
	// allowed is the bot's allowed_updates (nil: Telegram's default);
	// dropped counts the updates it kept from the bot.
	allowed map[string]bool
	dropped int

	// digestUploads: uploads are read as they stream, not kept
	// (WithUploadDigests).
	digestUploads bool
	// holds are answers held after the call acted (HoldAnswers).
	holds *fakehold.Holds

	// latency is the round trip of a Bot API call (WithLatency).
	latency time.Duration
	limiter limiter

	webhookURL    string
	webhookSecret string
	whQueue       []queuedUpdate
	whInflight    int64 // id of the update being delivered, 0 if none
	whWake        chan struct{}
	whLastErr     string
	whLastErrAt   time.Time
}

// notify wakes every waiter. Callers hold s.mu.
func (s *state) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}
