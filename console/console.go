package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/httpapi"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// maxFormBytes bounds a console form: a token or a CSRF field, no more.
const maxFormBytes = 64 << 10

// CancelToolCallID is recorded as the canceller of a job cancelled in the
// console, where the model's tool-call id would be.
const CancelToolCallID = "console"

// RetriedBy is recorded as who retried a failed job from the console.
const RetriedBy = "console"

// Store is what the console reads and changes, in the roles below (a page
// may read several); *store.Store satisfies it.
type Store interface {
	ConversationStore
	JobStore
	OverviewStore
	SessionStore
}

// ConversationStore reads conversations: the list, a transcript, its
// runs and its session records (facts and mood come from the plugins:
// FactReader, MoodReader).
type ConversationStore interface {
	// ConversationsByActivity lists conversations, most recently active first.
	ConversationsByActivity(ctx context.Context, limit, offset int) ([]core.Conversation, error)
	// SearchConversations lists the conversations whose name, user id or
	// messages contain q, most recently active first.
	SearchConversations(ctx context.Context, q string, limit, offset int) ([]core.Conversation, error)
	Conversation(ctx context.Context, id int64) (core.Conversation, error)
	// ConversationTokens sums the tokens of a conversation's runs.
	ConversationTokens(ctx context.Context, conversationID int64) (prompt, completion int64, err error)
	// RecentMessages returns up to limit of the newest messages, oldest first.
	RecentMessages(ctx context.Context, conversationID int64, limit int) ([]core.Message, error)
	// MessagesBetween returns the messages with from < seq <= to, by seq.
	MessagesBetween(ctx context.Context, conversationID, from, to int64, limit int) ([]core.Message, error)
	// Run returns one run with its record (core.ErrNotFound when there is
	// none).
	Run(ctx context.Context, id int64) (core.Run, error)
	// SummarizedRecords returns summarized records started before before,
	// newest first.
	SummarizedRecords(ctx context.Context, conversationID int64, before time.Time, limit int) ([]core.SessionRecord, error)
}

// JobStore reads the jobs, and cancels and retries them.
type JobStore interface {
	// Jobs lists a conversation's jobs newest first (status "" for all).
	Jobs(ctx context.Context, conversationID int64, status core.JobStatus, limit int) ([]core.Job, error)
	// Job returns one job (core.ErrNotFound).
	Job(ctx context.Context, id int64) (core.Job, error)
	// JobsAcross lists jobs of every conversation; CountJobs counts them.
	JobsAcross(ctx context.Context, f core.JobFilter) ([]core.JobRow, error)
	CountJobs(ctx context.Context, f core.JobFilter) (int64, error)
	// CancelJob cancels a pending job (core.ErrNotPending, core.ErrNotFound).
	CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error)
	// RetryJob makes a failed job due again now, a new attempt
	// (core.ErrNotFailed, core.ErrNotFound).
	RetryJob(ctx context.Context, id int64, now time.Time, by string) (core.Job, error)
}

// OverviewStore is what only the overview reads: activity, failures and
// tokens across every conversation.
type OverviewStore interface {
	// Activity counts messages and turns in buckets from since to now.
	Activity(ctx context.Context, since, now time.Time, bucket time.Duration) ([]core.ActivityBucket, error)
	// RecentFailures lists what failed since since, newest first.
	RecentFailures(ctx context.Context, since time.Time, limit int) ([]core.Failure, error)
	// TokensByDay sums the runs' tokens per day (in loc) and model.
	TokensByDay(ctx context.Context, since time.Time, loc *time.Location) ([]core.TokenDay, error)
}

// SessionStore keeps the console's logged-out sessions, for every
// replica.
type SessionStore interface {
	// RevokeConsoleSession records that a session was logged out, until
	// expires (when its cookie would have expired anyway);
	// ConsoleSessionRevoked reports it, to every replica.
	RevokeConsoleSession(ctx context.Context, id string, expires, now time.Time) error
	ConsoleSessionRevoked(ctx context.Context, id string) (bool, error)
}

// FactReader reads the facts a plugin keeps about a conversation's user,
// by key: the memory plugin's core.FactKeeper satisfies it.
type FactReader interface {
	Facts(ctx context.Context, conversationID int64) ([]core.Fact, error)
}

// FetchFunc downloads a file a user of bot sent on platform, through that
// bot's adapter (a file's id is its bot's: Telegram's are per token), at
// most max bytes (an error wrapping core.ErrTooLarge beyond).
type FetchFunc func(ctx context.Context, bot string, platform core.Platform, a core.Attachment, max int64) ([]byte, error)

// Bot is one bot of the process: its id and its view of the store,
// whose lists and counts see its rows only.
type Bot struct {
	ID    string
	Store Store
}

// Config configures the console.
type Config struct {
	// Token is http.api_token: the login form asks for it. Empty disables
	// the console: it is never served without one.
	Token string
	// Store is the view of every bot's rows: the lists of "All bots", and
	// a conversation or job of any bot by its id.
	Store Store
	// Bots are the process's bots as they are now (a reload may change
	// them). With more than one the pages offer a picker (?bot=ID); nil
	// or one: no picker, and Store's lists are the bot's.
	Bots func() []Bot
	// Facts and Mood read what the plugins keep of a conversation, for its
	// page (nil: it shows no facts, or no mood).
	Facts FactReader
	Mood  core.MoodKeeper
	// Location is the owner's zone (bot.timezone; default UTC): the
	// overview and the jobs page show times in it, and conversations
	// with no zone of their own are shown in it.
	Location *time.Location
	// Clock stamps and checks sessions, dates "now" and paces the live
	// updates (default the wall clock).
	Clock  core.Clock
	Logger *slog.Logger
	// Health computes the components /healthz shows (nil: the overview
	// shows none).
	Health func(ctx context.Context) []httpapi.Component
	// Prices are console.prices: per model, per million tokens, for an
	// estimated cost (none: no cost is shown).
	Prices map[string]config.Price
	// JobsChanged wakes the scheduler after a retry makes a job due now
	// (nil: it finds the job on its next wake).
	JobsChanged func()
	// Fetch downloads a user's image for its thumbnail in the transcript
	// (nil: images are described, not shown).
	Fetch FetchFunc
	// Platforms are the platforms the bot serves, for the jobs filter
	// (none: the filter is a text field).
	Platforms []core.Platform
	// LiveEvery is how often an open page's live stream looks for changes
	// (default 2s).
	LiveEvery time.Duration
	// Backoff slows down token guessing per address; share the API's, as
	// both guard http.api_token (default: one of the console's own).
	Backoff *httpapi.Backoff
	// UserData hands users' data over, erases it and answers pairing
	// codes (nil: none of it is offered).
	UserData UserData
}

// How much one page shows; enough to see what the bot is doing without
// loading a years-long history into one page.
const (
	conversationsPerPage = 50
	messagesShown        = 500
	jobsShown            = 200
	summariesShown       = 50
	moodPointsShown      = 500
)

// Console is the web console: an http.Handler for Prefix.
type Console struct {
	enabled   bool
	auth      *auth
	store     Store
	loc       *time.Location
	clock     core.Clock
	log       *slog.Logger
	changed   func()
	fetch     FetchFunc
	liveEvery time.Duration
	mux       *http.ServeMux
	// done ends the live streams (Close).
	done      chan struct{}
	closeOnce sync.Once
	// reader reads what each page shows.
	reader   *reader
	userData UserData
}

// New returns the console; mount it with Mount.
func New(c Config) *Console {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = core.SystemClock{}
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	if c.LiveEvery <= 0 {
		c.LiveEvery = 2 * time.Second
	}
	if c.JobsChanged == nil {
		c.JobsChanged = func() {}
	}
	if c.Backoff == nil {
		c.Backoff = httpapi.NewBackoff(httpapi.BackoffConfig{Now: c.Clock.Now})
	}
	s := &Console{
		enabled:   c.Token != "",
		auth:      newAuth(c.Token, c.Clock, c.Backoff),
		store:     c.Store,
		loc:       c.Location,
		clock:     c.Clock,
		log:       c.Logger,
		changed:   c.JobsChanged,
		fetch:     c.Fetch,
		liveEvery: c.LiveEvery,
		mux:       http.NewServeMux(),
		done:      make(chan struct{}),
		userData:  c.UserData,
		reader: &reader{store: c.Store, facts: c.Facts, mood: c.Mood, loc: c.Location, clock: c.Clock, log: c.Logger,
			health: c.Health, prices: c.Prices, platforms: c.Platforms, fetch: c.Fetch, bots: c.Bots, userData: c.UserData},
	}
	s.mux.HandleFunc("GET "+Prefix+"login", s.loginPage)
	s.mux.HandleFunc("POST "+Prefix+"login", s.login)
	s.mux.HandleFunc("POST "+Prefix+"logout", s.signedIn(s.logout))
	s.mux.HandleFunc("GET "+Prefix+"static/{file}", s.static)

	s.mux.HandleFunc("GET "+Prefix+"{$}", s.signedIn(s.page(overviewPage)))
	s.mux.HandleFunc("GET "+Prefix+"jobs", s.signedIn(s.page(jobsPage)))
	s.mux.HandleFunc("GET "+Prefix+"jobs/{id}", s.signedIn(s.page(jobPage)))
	s.mux.HandleFunc("POST "+Prefix+"jobs/{id}/cancel", s.signedIn(s.cancelJob))
	s.mux.HandleFunc("POST "+Prefix+"jobs/{id}/retry", s.signedIn(s.retryJob))
	s.mux.HandleFunc("GET "+Prefix+"conversations", s.signedIn(s.conversations))
	s.mux.HandleFunc("GET "+Prefix+"conversations/{id}", s.signedIn(s.page(conversationPage)))
	s.mux.HandleFunc("GET "+Prefix+"conversations/{id}/files/{seq}/{n}", s.signedIn(s.file))
	if c.UserData != nil {
		d := dataDesk{s}
		s.mux.HandleFunc("GET "+Prefix+"conversations/{id}/export", s.signedIn(d.exportConversation))
		s.mux.HandleFunc("POST "+Prefix+"conversations/{id}/erase", s.signedIn(d.eraseConversation))
		s.mux.HandleFunc("POST "+Prefix+"pairing/{code}/{verb}", s.signedIn(d.decidePairing))
	}
	// The form on a conversation's page; kept for bookmarks and scripts.
	s.mux.HandleFunc("POST "+Prefix+"conversations/{conv}/jobs/{id}/cancel", s.signedIn(s.cancelJob))

	s.mux.HandleFunc("GET "+Prefix+"events/{$}", s.signedIn(s.stream(overviewPage)))
	s.mux.HandleFunc("GET "+Prefix+"events/jobs", s.signedIn(s.stream(jobsPage)))
	s.mux.HandleFunc("GET "+Prefix+"events/jobs/{id}", s.signedIn(s.stream(jobPage)))
	s.mux.HandleFunc("GET "+Prefix+"events/conversations/{id}", s.signedIn(s.stream(conversationPage)))

	s.mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "There is no such page in the console.")
	})
	return s
}

// Mount serves the console under Prefix on mux. Without a token it mounts
// nothing, so the console's paths are 404, and warns: a console open to
// whoever reaches the listener is never what the owner meant.
func (s *Console) Mount(mux *http.ServeMux) {
	if !s.enabled {
		s.log.Warn("http.api_token is empty: the web console is disabled")
		return
	}
	mux.Handle(Prefix, s)
}

// Close ends the live streams: the HTTP server's shutdown waits for open
// requests, and a stream stays open until its page is closed. Safe to
// call more than once.
func (s *Console) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// contentSecurityPolicy allows the console's own script and stream and
// nothing else: no inline script, no other origin, forms only to the
// console. Even markup that slipped past escaping could neither run nor
// send anything anywhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; " +
	"img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP sets the console's security headers and routes.
func (s *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	s.mux.ServeHTTP(w, r)
}

// sessionHandler is a handler that runs with a checked session.
type sessionHandler func(w http.ResponseWriter, r *http.Request, s session)

// signedIn runs h for a request with a valid session. A page without one
// is sent to the login form (and back afterwards); a live stream or a
// POST without one is refused, as is a POST whose CSRF token does not
// match its session.
func (s *Console) signedIn(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, err := s.session(r)
		if err != nil && !errors.Is(err, errNoSession) {
			// Whether the session was logged out is unknown: refused, not
			// taken on trust.
			s.log.Error("console: checking a session", "path", r.URL.Path, "err", err)
			s.fail(w, r, http.StatusServiceUnavailable, "The console cannot check your session right now (the store is failing; see /healthz). Try again in a moment.")
			return
		}
		ok := err == nil
		switch {
		case !ok && r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, Prefix+"events/"):
			http.Redirect(w, r, Prefix+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		case !ok:
			s.fail(w, r, http.StatusForbidden, "You are not logged in to the console (or the session expired).")
		case r.Method == http.MethodPost && !sess.csrfOK(r):
			s.log.Warn("console request refused: missing or wrong CSRF token", "path", r.URL.Path, "remote", r.RemoteAddr)
			s.fail(w, r, http.StatusForbidden, "This form is stale or did not come from the console: reload the page and try again.")
		default:
			h(w, r, sess)
		}
	}
}

// loginPage is GET /console/login.
func (s *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if _, err := s.session(r); err == nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", loginView{Next: next})
}

// login is POST /console/login: the token in, a session cookie out. An
// address that sent too many wrong tokens waits first (see auth.attempt),
// told so before its form is read: a guesser that trickles its forms
// holds no connection for them (the server closes one answered before
// its body).
func (s *Console) login(w http.ResponseWriter, r *http.Request) {
	if wait, ok := s.auth.attempt(r, s.log); !ok {
		w.Header().Set("Retry-After", httpapi.RetryAfter(wait))
		s.render(w, r, http.StatusTooManyRequests, "login", loginView{Next: safeNext(r.URL.Query().Get("next")),
			Error: "Too many wrong tokens from your address: wait " + httpapi.RetryAfter(wait) +
				" s before trying again (until then even the right token is refused)."})
		return
	}
	if err := r.ParseForm(); err != nil {
		// A body cut short (http.read_timeout) or too large is no guess.
		s.fail(w, r, http.StatusBadRequest, "The login form did not arrive whole; try again.")
		return
	}
	next := safeNext(r.PostFormValue("next"))
	if !s.auth.tokenMatches(r.PostFormValue(TokenField)) {
		s.auth.failed(r, s.log)
		s.render(w, r, http.StatusUnauthorized, "login", loginView{Next: next, Error: "That is not the API token (http.api_token)."})
		return
	}
	s.auth.backoff.Succeed(httpapi.ClientIP(r))
	value, err := s.auth.issue()
	if err != nil {
		s.log.Error("console login", "err", err)
		s.fail(w, r, http.StatusInternalServerError, "The session could not be started; see the log.")
		return
	}
	http.SetCookie(w, sessionCookie(r, value, int(SessionTTL/time.Second)))
	s.log.Info("console login", "ip", httpapi.ClientIP(r).String())
	if !httpapi.HTTPS(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		// Said at a login only, which needs the token: no flood of lines.
		s.log.Warn("console login: X-Forwarded-Proto: https came from a peer that is not in http.trusted_proxies: "+
			"the header is ignored and the session cookie is not marked Secure; list the TLS proxy in http.trusted_proxies",
			"peer", httpapi.PeerIP(r).String())
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /console/logout: the session is recorded as logged out
// in the store, so that its cookie, wherever a copy of it is kept, opens
// no replica's console again, and this browser's cookie is dropped.
// Changing http.api_token ends every session.
func (s *Console) logout(w http.ResponseWriter, r *http.Request, sess session) {
	if err := s.store.RevokeConsoleSession(r.Context(), sess.nonce, sess.issued.Add(SessionTTL), s.clock.Now()); err != nil {
		// The cookie stays: the owner must know the session still works.
		s.internal(w, r, "logging out", err)
		return
	}
	http.SetCookie(w, sessionCookie(r, "", -1))
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// errNoSession is a request without a session: no cookie, a cookie that
// is not genuine, expired, or logged out.
var errNoSession = errors.New("no console session")

// session is r's session, checked: its cookie genuine and unexpired, and
// the session not logged out. An error other than errNoSession is the
// store's, which could not say whether it was.
func (s *Console) session(r *http.Request) (session, error) {
	sess, ok := s.auth.fromRequest(r)
	if !ok {
		return session{}, errNoSession
	}
	revoked, err := s.store.ConsoleSessionRevoked(r.Context(), sess.nonce)
	switch {
	case err != nil:
		return session{}, fmt.Errorf("checking whether the session was logged out: %w", err)
	case revoked:
		return session{}, errNoSession
	}
	return sess, nil
}

// safeNext is where to go after logging in: a console path, never another
// site (an open redirect would lend the console's name to phishing).
func safeNext(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.Contains(raw, `\`) {
		return Prefix
	}
	p := path.Clean(u.Path)
	if !strings.HasPrefix(p+"/", Prefix) || p+"/" == Prefix+"login/" || strings.HasPrefix(p+"/", Prefix+"events/") {
		return Prefix
	}
	if strings.HasSuffix(u.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

// pathID parses a positive id from the path, answering 404 when it is not
// one.
func (s *Console) pathID(w http.ResponseWriter, r *http.Request, name, what string) (int64, bool) {
	id, err := parseID(r.PathValue(name))
	if err != nil {
		s.fail(w, r, http.StatusNotFound, "There is no such "+what+".")
		return 0, false
	}
	return id, true
}

// errBadID is a path id that is not a positive integer.
var errBadID = pageError{code: http.StatusNotFound, msg: "There is no such page in the console."}

func parseID(raw string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, errBadID
	}
	return id, nil
}

// internal logs err and answers 500 without its details.
func (s *Console) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.Error("console: "+what, "path", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, "Something went wrong "+what+"; see the bot's log.")
}

// fail renders an error page.
func (s *Console) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	v := errorView{Code: code, Status: http.StatusText(code), Message: msg}
	if sess, err := s.session(r); err == nil {
		v.CSRF = sess.csrf
	}
	s.render(w, r, code, "error", v)
}
