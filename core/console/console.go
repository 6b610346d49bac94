package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

// maxFormBytes bounds a console form: a token or a CSRF field, no more.
const maxFormBytes = 64 << 10

// CancelToolCallID is recorded as the canceller of a job cancelled in the
// console, where the model's tool-call id would be.
const CancelToolCallID = "console"

// Store is what the console reads and changes; *store.Store satisfies it.
type Store interface {
	// ConversationsByActivity lists conversations, most recently active first.
	ConversationsByActivity(ctx context.Context, limit, offset int) ([]core.Conversation, error)
	Conversation(ctx context.Context, id int64) (core.Conversation, error)
	// RecentMessages returns up to limit of the newest messages, oldest first.
	RecentMessages(ctx context.Context, conversationID int64, limit int) ([]core.Message, error)
	// Jobs lists jobs newest first (status "" for all).
	Jobs(ctx context.Context, conversationID int64, status core.JobStatus, limit int) ([]core.Job, error)
	// CancelJob cancels a pending job (core.ErrNotPending, core.ErrNotFound).
	CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error)
	Facts(ctx context.Context, conversationID int64) ([]core.Fact, error)
	// SummarizedRecords returns summarized records started before before,
	// newest first.
	SummarizedRecords(ctx context.Context, conversationID int64, before time.Time, limit int) ([]core.SessionRecord, error)
	// MoodHistory returns up to limit of the newest mood points, oldest first.
	MoodHistory(ctx context.Context, conversationID int64, limit int) ([]core.MoodPoint, error)
	// Run returns one run with its record (core.ErrNotFound when there is
	// none).
	Run(ctx context.Context, id int64) (core.Run, error)
}

// Config configures the console.
type Config struct {
	// Token is http.api_token: the login form asks for it. Empty disables
	// the console: it is never served without one.
	Token string
	Store Store
	// Location is the zone of conversations with none of their own (the
	// bot's bot.timezone; default UTC).
	Location *time.Location
	// Clock stamps and checks sessions and dates "now" (default the wall
	// clock).
	Clock  core.Clock
	Logger *slog.Logger
}

// How much of a conversation one page shows; enough to see what the bot
// is doing without loading a years-long history into one page.
const (
	conversationsPerPage = 50
	messagesShown        = 500
	jobsShown            = 200
	summariesShown       = 50
	moodPointsShown      = 500
)

// Console is the web console: an http.Handler for Prefix.
type Console struct {
	enabled bool
	auth    *auth
	store   Store
	loc     *time.Location
	clock   core.Clock
	log     *slog.Logger
	mux     *http.ServeMux
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
	s := &Console{
		enabled: c.Token != "",
		auth:    newAuth(c.Token, c.Clock),
		store:   c.Store,
		loc:     c.Location,
		clock:   c.Clock,
		log:     c.Logger,
		mux:     http.NewServeMux(),
	}
	s.mux.HandleFunc("GET "+Prefix+"login", s.loginPage)
	s.mux.HandleFunc("POST "+Prefix+"login", s.login)
	s.mux.HandleFunc("POST "+Prefix+"logout", s.signedIn(s.logout))
	s.mux.HandleFunc("GET "+Prefix+"{$}", s.signedIn(s.conversations))
	s.mux.HandleFunc("GET "+Prefix+"conversations/{id}", s.signedIn(s.conversation))
	s.mux.HandleFunc("POST "+Prefix+"conversations/{id}/jobs/{job}/cancel", s.signedIn(s.cancelJob))
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

// ServeHTTP sets the console's security headers and routes.
func (s *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No script at all, styles inline only, forms only to the console: even
	// markup that slipped past escaping could neither run nor send
	// anything anywhere.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "+
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
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
// is sent to the login form (and back afterwards); a POST without one is
// refused, as is a POST whose CSRF token does not match its session.
func (s *Console) signedIn(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.auth.fromRequest(r)
		switch {
		case !ok && r.Method == http.MethodGet:
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
	if _, ok := s.auth.fromRequest(r); ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", loginView{Next: next})
}

// login is POST /console/login: the token in, a session cookie out.
func (s *Console) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"))
	if !s.auth.tokenMatches(r.PostFormValue(TokenField)) {
		s.log.Warn("console login refused: wrong token", "remote", r.RemoteAddr)
		s.render(w, r, http.StatusUnauthorized, "login", loginView{Next: next, Error: "That is not the API token (http.api_token)."})
		return
	}
	value, err := s.auth.issue()
	if err != nil {
		s.log.Error("console login", "err", err)
		s.fail(w, r, http.StatusInternalServerError, "The session could not be started; see the log.")
		return
	}
	http.SetCookie(w, sessionCookie(r, value, int(SessionTTL/time.Second)))
	s.log.Info("console login", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout is POST /console/logout. Sessions are not stored, so it drops
// this browser's cookie; changing http.api_token ends every session.
func (s *Console) logout(w http.ResponseWriter, r *http.Request, _ session) {
	http.SetCookie(w, sessionCookie(r, "", -1))
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}

// safeNext is where to go after logging in: a console path, never another
// site (an open redirect would lend the console's name to phishing).
func safeNext(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.Contains(raw, `\`) {
		return Prefix
	}
	p := path.Clean(u.Path)
	if !strings.HasPrefix(p+"/", Prefix) || p+"/" == Prefix+"login/" {
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

// conversations is GET /console/: the conversations, most recent first.
func (s *Console) conversations(w http.ResponseWriter, r *http.Request, sess session) {
	page := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.fail(w, r, http.StatusBadRequest, "The page number must be a positive integer.")
			return
		}
		page = n
	}
	// One more than a page tells whether there is a next one.
	convs, err := s.store.ConversationsByActivity(r.Context(), conversationsPerPage+1, (page-1)*conversationsPerPage)
	if err != nil {
		s.internal(w, r, "listing conversations", err)
		return
	}
	v := conversationsView{layout: layout{CSRF: sess.csrf}, Page: page}
	if len(convs) > conversationsPerPage {
		convs, v.Next = convs[:conversationsPerPage], page+1
	}
	if page > 1 {
		v.Prev = page - 1
	}
	for _, c := range convs {
		v.Conversations = append(v.Conversations, conversationRow(c))
	}
	s.render(w, r, http.StatusOK, "conversations", v)
}

// conversation is GET /console/conversations/{id}.
func (s *Console) conversation(w http.ResponseWriter, r *http.Request, sess session) {
	id, ok := s.pathID(w, r, "id", "conversation")
	if !ok {
		return
	}
	ctx := r.Context()
	conv, err := s.store.Conversation(ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "There is no conversation "+strconv.FormatInt(id, 10)+".")
		return
	}
	if err != nil {
		s.internal(w, r, "reading a conversation", err)
		return
	}
	d := conversationData{conv: conv, now: s.clock.Now()}
	steps := []struct {
		what string
		run  func() error
	}{
		{"reading messages", func() (err error) { d.messages, err = s.store.RecentMessages(ctx, id, messagesShown); return }},
		{"reading jobs", func() (err error) { d.jobs, err = s.store.Jobs(ctx, id, "", jobsShown); return }},
		{"reading facts", func() (err error) { d.facts, err = s.store.Facts(ctx, id); return }},
		{"reading summaries", func() (err error) {
			d.summaries, err = s.store.SummarizedRecords(ctx, id, d.now, summariesShown)
			return
		}},
		{"reading the mood history", func() (err error) { d.mood, err = s.store.MoodHistory(ctx, id, moodPointsShown); return }},
	}
	for _, st := range steps {
		if err := st.run(); err != nil {
			s.internal(w, r, st.what, err)
			return
		}
	}
	runs, err := s.runsOf(ctx, d.messages)
	if err != nil {
		s.internal(w, r, "reading run records", err)
		return
	}
	d.runs = runs
	v := s.conversationView(d)
	v.CSRF = sess.csrf
	v.Notice = notice(r.URL.Query())
	s.render(w, r, http.StatusOK, "conversation", v)
}

// runsOf reads the runs that wrote the assistant messages shown, by id,
// one query per run: a page shows a few hundred messages at most, and
// reading every run of a long conversation (each record holds a rendered
// prompt) would cost more. A run gone from the store is left out.
func (s *Console) runsOf(ctx context.Context, msgs []core.Message) (map[int64]core.Run, error) {
	runs := map[int64]core.Run{}
	for _, m := range msgs {
		if m.RunID == nil || m.Role != core.RoleAssistant {
			continue
		}
		id := *m.RunID
		if _, done := runs[id]; done {
			continue
		}
		run, err := s.store.Run(ctx, id)
		if errors.Is(err, core.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		runs[id] = run
	}
	return runs, nil
}

// cancelJob is POST /console/conversations/{id}/jobs/{job}/cancel.
func (s *Console) cancelJob(w http.ResponseWriter, r *http.Request, _ session) {
	convID, ok := s.pathID(w, r, "id", "conversation")
	if !ok {
		return
	}
	jobID, ok := s.pathID(w, r, "job", "job")
	if !ok {
		return
	}
	_, err := s.store.CancelJob(r.Context(), convID, jobID, CancelToolCallID)
	result := "cancelled"
	switch {
	case errors.Is(err, core.ErrNotPending):
		result = "not_pending"
	case errors.Is(err, core.ErrNotFound):
		result = "not_found"
	case err != nil:
		s.internal(w, r, "cancelling a job", err)
		return
	default:
		s.log.Info("job cancelled in the console", "conversation_id", convID, "job_id", jobID, "remote", r.RemoteAddr)
	}
	// Post/redirect/get: a reload does not post the cancel again.
	q := url.Values{"notice": {result}, "job": {strconv.FormatInt(jobID, 10)}}
	http.Redirect(w, r, Prefix+"conversations/"+strconv.FormatInt(convID, 10)+"?"+q.Encode()+"#jobs", http.StatusSeeOther)
}

// notice is the message a redirect after a cancel asks the page to show.
// Only fixed texts and a number: a query string never becomes page text.
func notice(q url.Values) string {
	id, err := strconv.ParseInt(q.Get("job"), 10, 64)
	if err != nil {
		return ""
	}
	n := strconv.FormatInt(id, 10)
	switch q.Get("notice") {
	case "cancelled":
		return "Job " + n + " cancelled."
	case "not_pending":
		return "Job " + n + " was no longer pending: nothing was cancelled."
	case "not_found":
		return "Job " + n + " is not a job of this conversation."
	}
	return ""
}

// pathID parses a positive id from the path, answering 404 when it is not
// one.
func (s *Console) pathID(w http.ResponseWriter, r *http.Request, name, what string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusNotFound, "There is no such "+what+".")
		return 0, false
	}
	return id, true
}

// internal logs err and answers 500 without its details.
func (s *Console) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.Error("console: "+what, "path", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, "Something went wrong "+what+"; see the bot's log.")
}

// fail renders an error page.
func (s *Console) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	v := errorView{Code: code, Status: http.StatusText(code), Message: msg}
	if sess, ok := s.auth.fromRequest(r); ok {
		v.CSRF = sess.csrf
	}
	s.render(w, r, code, "error", v)
}
