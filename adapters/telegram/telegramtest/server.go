package telegramtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"github.com/parleybot/parley/adapters/internal/fakehold"
)

// Option configures a Server.
type Option func(*Server)

// WithToken sets the bot token the server accepts (default
// "123456:TEST-token-abc"). Requests with any other token get 401.
func WithToken(token string) Option {
	return func(s *Server) { s.token = token }
}

// WithBotUser sets the bot's own user, returned by getMe and used as the
// sender of its messages (default id 999000, username "parley_test_bot",
// first name "Parley").
func WithBotUser(id int64, username string) Option {
	return func(s *Server) {
		s.bot.ID = id
		s.bot.Username = username
	}
}

// WithUploadDigests makes the fake keep of each uploaded file only its
// size and SHA-256 (SentFile.Size, SentFile.SHA256; Data is nil), read as
// it streams in: a benchmark then measures the memory of the bot, not of
// the fake's copies.
func WithUploadDigests() Option { return func(s *Server) { s.digestUploads = true } }

// WithNow sets the clock that dates messages and SentMessage.At (default
// time.Now). Long-poll timeouts always use real time.
func WithNow(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// User is a Telegram user that a test plays.
type User struct {
	ID        int64
	FirstName string
	LastName  string
	Username  string
}

// SentMessage is one message the bot sent with sendMessage or sendPhoto.
type SentMessage struct {
	ChatID    int64
	MessageID int
	// Text is the text parameter (a photo's caption) exactly as the bot
	// sent it.
	Text string
	// Plain is the text a user reads: for MarkdownV2, markup and escapes
	// removed; otherwise the same as Text.
	Plain     string
	ParseMode string
	// Entities are the styles a user sees on Plain (MarkdownV2 only), with
	// offsets and lengths in UTF-16 code units as Telegram counts them.
	Entities []models.MessageEntity
	// Photo is sendPhoto's photo parameter: the URL the bot gave, or
	// "attach://<name>" for an upload; "" for a text message.
	Photo string
	// Kind is "" for a text message, else the file it shows as Telegram
	// does: "photo", "document", "voice" or "audio" (Files has an
	// upload's bytes).
	Kind string
	// ReplyToMessageID is reply_parameters.message_id (or the legacy
	// reply_to_message_id), 0 if the message is not a reply.
	ReplyToMessageID int
	// Buttons is the message's inline keyboard (reply_markup), row by
	// row, nil for none. Messages and Message show it as edits left it.
	Buttons [][]Button
	At      time.Time
	// EditedAt is when editMessageText last changed the message (zero if
	// never); only Messages and Message show a message as edited.
	EditedAt time.Time
}

// chatState is what the fake knows about one chat.
type chatState struct {
	chat      models.Chat
	lastMsgID int
}

// queuedUpdate is an update waiting for getUpdates or the webhook.
type queuedUpdate struct {
	id  int64
	raw []byte
	// once marks an injected update without a readable update_id: it is
	// delivered once and then dropped, since a client cannot confirm it.
	once bool
}

// Server is a fake Telegram Bot API server. All methods are safe for
// concurrent use.
//
// It composes one part per area of the Bot API, each holding a pointer to
// the shared state; embedding promotes the parts' methods, which are the
// Server's API. The Server itself routes the calls and counts them.
type Server struct {
	*state
	*faultInjector   // failures, blocked users, revoked tokens, refused markup
	*throttle        // latency and rate limits
	*updateFeed      // what users write; getUpdates
	*chatAPI         // sendMessage, sendPhoto, sendChatAction and what was sent
	*fileStore       // files users send; getFile and downloads
	*webhookDelivery // setWebhook and the deliveries to it
	*commandMenu     // setMyCommands and its kin
	*chatDirectory   // the chats the bot may write to; getChat
	*draftAPI        // sendMessageDraft and the drafts users saw
	*editAPI         // editMessageText, deleteMessage, messages as they are now
	*callbackAPI     // taps on the bot's buttons; answerCallbackQuery
	*reactionAPI     // setMessageReaction; the bot's reactions
	*uploadAPI       // sendPhoto/sendDocument/sendVoice/sendAudio uploads; Files
}

// NewServer starts a fake Bot API server. It is closed in t.Cleanup, which
// also releases long polls still held and stops webhook deliveries.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st := &state{
		token: "123456:TEST-token-abc",
		bot: models.User{
			ID:            999000,
			IsBot:         true,
			FirstName:     "Parley",
			Username:      "parley_test_bot",
			CanJoinGroups: true,
		},
		now:          time.Now,
		sentIdx:      map[int64][]int{},
		ctx:          ctx,
		cancel:       cancel,
		done:         make(chan struct{}),
		changed:      make(chan struct{}),
		nextUpdateID: 1,
		chats:        map[int64]*chatState{},
		blocked:      map[int64]bool{},
		actions:      map[int64][]string{},
		calls:        map[string]int{},
		faults:       map[string][]*scheduledFault{},
		files:        map[string]*storedFile{},
		filePaths:    map[string]*storedFile{},
		myCommands:   map[string][]Command{},
		book:         draftBook{drafts: map[int64][]Draft{}, ended: map[int64]int{}},
		msgs:         messageBook{current: map[msgKey]SentMessage{}, deleted: map[msgKey]bool{}, edits: map[msgKey][]Edit{}},
		refused:      refusals{gone: map[string]bool{}, flood: map[string]time.Time{}},
		cb:           callbackBook{queries: map[string]*callbackQuery{}},
		botReactions: map[msgKey]string{},
		whWake:       make(chan struct{}, 1),
		whClient:     &http.Client{Transport: &http.Transport{}},
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
	s.wg.Add(1)
	go s.deliverLoop()
	t.Cleanup(s.close)
	return s
}

// newServer puts the parts together over st.
func newServer(st *state) *Server {
	faults := &faultInjector{st}
	return &Server{
		state:           st,
		faultInjector:   faults,
		throttle:        &throttle{st},
		updateFeed:      &updateFeed{st},
		chatAPI:         &chatAPI{st},
		fileStore:       &fileStore{st, faults},
		webhookDelivery: &webhookDelivery{st},
		commandMenu:     &commandMenu{st},
		chatDirectory:   &chatDirectory{st},
		draftAPI:        &draftAPI{st},
		editAPI:         &editAPI{st},
		callbackAPI:     &callbackAPI{st},
		reactionAPI:     &reactionAPI{st},
		uploadAPI:       &uploadAPI{st},
	}
}

// close stops deliveries, releases held requests, then shuts the server.
func (s *Server) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.cancel()
		s.wg.Wait()
		s.srv.Close()
		s.whClient.CloseIdleConnections()
	})
}

// URL returns the base URL to pass to bot.WithServerURL, without a trailing
// slash.
func (s *Server) URL() string { return s.srv.URL }

// Token returns the token the server accepts.
func (s *Server) Token() string { return s.token }

// BotID returns the bot's user id.
func (s *Server) BotID() int64 { return s.bot.ID }

// rawResult is a result that is already JSON.
type rawResult []byte

// errClientGone means the client went away; nothing is written.
var errClientGone = &Fault{Code: -1}

// serveHTTP routes /bot<token>/<method> and file downloads,
// /file/bot<token>/<file_path>.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, r, rest)
		return
	}
	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	if latency > 0 {
		if !s.halfTrip(r.Context(), latency) {
			return
		}
		w = &lateWriter{ResponseWriter: w, wait: func() { s.halfTrip(r.Context(), latency) }}
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeFault(w, notFound())
		return
	}
	method = strings.TrimPrefix(method, "test/")
	key := strings.ToLower(method)

	s.mu.Lock()
	s.calls[key]++
	revoked := s.revoked
	s.notify()
	s.mu.Unlock()

	if token != s.token || revoked {
		writeFault(w, Fault{Code: http.StatusUnauthorized, Description: "Unauthorized"})
		return
	}
	h, known := s.handler(key)
	if !known {
		writeFault(w, notFound())
		return
	}
	if f := s.refusal(key); f != nil {
		writeFault(w, *f)
		return
	}
	p, err := s.readerOf(key, r)(r)
	if err != nil {
		writeFault(w, paramsFault(err))
		return
	}
	if s.limiter.limited(key) {
		if f := s.limiter.admit(p["chat_id"], s.now()); f != nil {
			writeFault(w, *f)
			return
		}
	}
	if f := s.takeFault(key); f != nil {
		writeFault(w, *f)
		return
	}
	res, f := h(r.Context(), p)
	if f == errClientGone || (f == nil && !s.holds.Wait(key, r.Context().Done())) {
		return
	}
	if f != nil {
		writeFault(w, *f)
		return
	}
	body, ok := res.(rawResult)
	if !ok {
		var err error
		if body, err = json.Marshal(res); err != nil {
			writeFault(w, ServerError())
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"ok":true,"result":`))
	_, _ = w.Write(body)
	_, _ = w.Write([]byte(`}`))
}

// readerOf is how the parameters of a call to method (lower-cased) are
// read: streamed and digested for an upload with WithUploadDigests.
func (s *Server) readerOf(method string, r *http.Request) func(*http.Request) (params, error) {
	if _, upload := uploadMethods[method]; s.digestUploads && upload && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		return readDigested
	}
	return readParams
}

type handlerFunc func(ctx context.Context, p params) (any, *Fault)

// handler returns the handler of a lower-cased method name.
func (s *Server) handler(method string) (handlerFunc, bool) {
	switch method {
	case "getme":
		return func(context.Context, params) (any, *Fault) { return s.bot, nil }, true
	case "getupdates":
		return s.getUpdates, true
	case "setwebhook":
		return s.setWebhook, true
	case "deletewebhook":
		return s.deleteWebhook, true
	case "getwebhookinfo":
		return s.getWebhookInfo, true
	case "sendmessage":
		return s.sendMessage, true
	case "sendphoto":
		return s.sendPhotoAny, true
	case "senddocument", "sendvoice", "sendaudio":
		return s.uploadAPI.send(uploadMethods[method]), true
	case "sendchataction":
		return s.sendChatAction, true
	case "sendmessagedraft":
		return s.sendMessageDraft, true
	case "editmessagetext":
		return s.editMessageText, true
	case "deletemessage":
		return s.deleteMessage, true
	case "editmessagereplymarkup":
		return s.editMessageReplyMarkup, true
	case "answercallbackquery":
		return s.answerCallbackQuery, true
	case "setmessagereaction":
		return s.setMessageReaction, true
	case "getchat":
		return s.getChat, true
	case "getfile":
		return s.getFile, true
	case "setmycommands":
		return s.setMyCommands, true
	case "deletemycommands":
		return s.deleteMyCommands, true
	case "getmycommands":
		return s.getMyCommands, true
	}
	return nil, false
}

// errorBody is the JSON of a failed call.
type errorBody struct {
	OK          bool            `json:"ok"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *responseParams `json:"parameters,omitempty"`
}

type responseParams struct {
	RetryAfter int `json:"retry_after,omitempty"`
}

func writeFault(w http.ResponseWriter, f Fault) {
	b := errorBody{ErrorCode: f.Code, Description: f.Description}
	if f.RetryAfter > 0 {
		b.Parameters = &responseParams{RetryAfter: f.RetryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	code := f.Code
	if code < 100 || code > 599 {
		code = http.StatusInternalServerError
	}
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(b)
}

// Calls returns how many requests of method (e.g. "getUpdates",
// "sendMessage"; case does not matter) arrived, failed ones included.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToLower(method)]
}

// WaitCalls waits until at least n requests of method arrived; after
// timeout it fails the test (call it from the test goroutine).
func (s *Server) WaitCalls(t testing.TB, method string, n int, timeout time.Duration) {
	t.Helper()
	key := strings.ToLower(method)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		got := s.calls[key]
		changed := s.changed
		s.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("telegramtest: waited %v for %d %s calls, got %d", timeout, n, method, got)
			return
		case <-s.done:
			t.Fatalf("telegramtest: server closed while waiting for %d %s calls, got %d", n, method, got)
			return
		}
	}
}
