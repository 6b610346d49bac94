package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
)

// MaxBodyBytes bounds the body of an API request.
const MaxBodyBytes = 1 << 20

// Store is what the API needs of the store; store implements it.
type Store interface {
	// DeleteConversation deletes a conversation unless enabled recurring
	// jobs block it (core.ErrBlockedByAutomations) and confirm is false.
	DeleteConversation(ctx context.Context, id int64, confirm bool) (core.Deletion, error)
	Conversation(ctx context.Context, id int64) (core.Conversation, error)
	ConversationByThread(ctx context.Context, p core.Platform, channelThreadID string) (core.Conversation, error)
	Conversations(ctx context.Context, limit, offset int) ([]core.Conversation, error)
	MessagesPage(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error)
	EnsureConversation(ctx context.Context, ref core.InboundRecord) (core.Conversation, error)
	JobByIdempotencyKey(ctx context.Context, key string, since time.Time) (core.Job, error)
	RouteMessage(ctx context.Context, j *core.Job, max int, since time.Time) (bool, error)
	Job(ctx context.Context, id int64) (core.Job, error)
	Jobs(ctx context.Context, conversationID int64, status core.JobStatus, limit int) ([]core.Job, error)
	CancelJob(ctx context.Context, conversationID, id int64, toolCallID string) (core.Job, error)
}

// APIConfig configures the API.
type APIConfig struct {
	// Reload, when set, serves POST /api/v1/reload (`parley reload`): it
	// re-reads the config and applies its bots, returning what changed,
	// or why the new config was refused (the running one kept).
	Reload func(ctx context.Context) (string, error)
	// Token is the bearer token every request must carry (http.api_token).
	// Empty disables the API: it is never served without one.
	Token string
	Store Store
	// Bots, when set, are the bots the API routes for; Store then sees
	// every bot's rows (lists without a bot, lookups by id) and Adapters
	// are unused. Nil: one bot, Store and Adapters.
	Bots func() []Bot
	// Adapters are the enabled adapters. A channel_type is the platform of
	// one of them (anything else is a 400 that names them), and a routed
	// message to a user the bot has not talked with is opened through it.
	Adapters []core.Adapter
	// JobsChanged wakes the scheduler: a message to send now is a job due
	// now.
	JobsChanged func()
	// Now is the clock (default time.Now).
	Now func() time.Time
	// TimeZone is the zone of conversations the API creates (bot.timezone).
	TimeZone string
	// MaxPending caps a conversation's waiting messages
	// (scheduler.max_pending_per_conversation; default 50).
	MaxPending int
	// Backoff slows down token guessing per address; share the console's
	// (default: one of the API's own, on Now).
	Backoff *Backoff
	// Export, when set, serves GET /api/v1/conversations/{id}/export:
	// everything kept about the conversation's user, as files (JSON and
	// Markdown); an unknown id is core.ErrNotFound.
	Export func(ctx context.Context, id int64) ([]core.OutboundFile, error)
	// Erase, when set, serves DELETE /api/v1/conversations/{id}?erase=true:
	// every row about the conversation's user deleted and the space
	// reclaimed (an unknown id is core.ErrNotFound); it returns the rows.
	Erase func(ctx context.Context, id int64) (int64, error)
}

// API is the JSON API under /api/v1/, behind a bearer token.
type API struct {
	// tokenSum is the token's SHA-256: comparing fixed-size sums keeps the
	// comparison constant-time in the token's length too.
	tokenSum [sha256.Size]byte
	enabled  bool
	cfg      APIConfig
	store    Store
	// adapters are cfg.Adapters by platform; platforms lists them sorted,
	// for the error that names them.
	adapters  map[core.Platform]core.Adapter
	platforms []string
	log       *slog.Logger
	mux       *http.ServeMux
	// unavailable spaces the lines about a store that cannot take
	// writes: one a minute, not one a request. Shared by the API's views
	// for a bot (forBot).
	unavailable *unavailableLog
}

// unavailableLog is when the API last logged a store refusing writes, and
// how many refusals it held back since.
type unavailableLog struct {
	mu     sync.Mutex
	logged time.Time
	held   int
}

// NewAPI returns the API; mount it with Mount.
func NewAPI(c APIConfig, log *slog.Logger) *API {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.JobsChanged == nil {
		c.JobsChanged = func() {}
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 50
	}
	if c.Backoff == nil {
		c.Backoff = NewBackoff(BackoffConfig{Now: c.Now})
	}
	a := &API{
		tokenSum:    sha256.Sum256([]byte(c.Token)),
		enabled:     c.Token != "",
		cfg:         c,
		store:       c.Store,
		log:         log,
		mux:         http.NewServeMux(),
		unavailable: &unavailableLog{},
	}
	a.adapters, a.platforms = byPlatform(c.Adapters)
	a.mux.HandleFunc("POST /api/v1/messages", a.postMessage)
	a.mux.HandleFunc("GET /api/v1/messages/{id}", a.getMessage)
	a.mux.HandleFunc("GET /api/v1/conversations", a.listConversations)
	a.mux.HandleFunc("GET /api/v1/conversations/{id}/messages", a.conversationMessages)
	a.mux.HandleFunc("DELETE /api/v1/conversations/{id}", a.deleteConversation)
	if c.Export != nil {
		a.mux.HandleFunc("GET /api/v1/conversations/{id}/export", a.exportConversation)
	}
	a.mux.HandleFunc("GET /api/v1/jobs", a.listJobs)
	a.mux.HandleFunc("DELETE /api/v1/jobs/{id}", a.cancelJob)
	if c.Reload != nil {
		a.mux.HandleFunc("POST /api/v1/reload", a.reload)
	}
	a.mux.HandleFunc("/api/", func(w http.ResponseWriter, _ *http.Request) {
		WriteError(w, http.StatusNotFound, "no such endpoint")
	})
	return a
}

// Mount serves the API under /api/ on mux. Without a token it mounts
// nothing, so /api/ paths are 404, and warns: an API open to whoever
// reaches the listener is never what the owner meant.
func (a *API) Mount(mux *http.ServeMux) {
	if !a.enabled {
		a.log.Warn("http.api_token is empty: the API is disabled")
		return
	}
	mux.Handle("/api/", a)
}

// ServeHTTP checks the bearer token, bounds the body and routes. An
// address that sent too many wrong tokens waits (429, Retry-After) before
// any token of its is checked again, the right one included.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ip := ClientIP(r)
	if v := a.cfg.Backoff.Check(ip); v.Wait > 0 {
		a.logRefusal(ip, v)
		WriteBackoff(w, v.Wait)
		return
	}
	if msg, ok := a.authorize(r); !ok {
		challenge := "Bearer"
		if r.Header.Get("Authorization") != "" {
			challenge = `Bearer error="invalid_token"`
			a.logRefusal(ip, a.cfg.Backoff.Fail(ip))
		}
		w.Header().Set("WWW-Authenticate", challenge)
		WriteError(w, http.StatusUnauthorized, msg)
		return
	}
	a.cfg.Backoff.Succeed(ip)
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	a.mux.ServeHTTP(w, r)
}

// logRefusal logs wrong tokens, one line per address per minute with
// the count; never the token.
func (a *API) logRefusal(ip netip.Addr, v Verdict) {
	if v.Log {
		a.log.Warn("api requests refused: wrong bearer token", "ip", ip.String(), "wrong_tokens", v.Failures,
			"refused_while_waiting", v.Refused, "wait", v.Wait.Round(time.Second).String())
	}
}

// authorize reports whether r carries the token, and why not.
func (a *API) authorize(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "missing bearer token: send Authorization: Bearer <http.api_token>", false
	}
	scheme, token, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "the Authorization header must be Bearer <http.api_token>", false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(sum[:], a.tokenSum[:]) != 1 {
		return "invalid bearer token", false
	}
	return "", true
}

// blockedResponse is the 409 of a deletion refused for recurring jobs.
type blockedResponse struct {
	Deleted              bool              `json:"deleted"`
	BlockedByAutomations bool              `json:"blocked_by_automations"`
	Automations          []core.Automation `json:"automations"`
}

// deletedResponse is the 200 of a deletion.
type deletedResponse struct {
	Deleted bool  `json:"deleted"`
	ID      int64 `json:"id"`
}

// deleteConversation is DELETE /api/v1/conversations/{id}[?confirm=true].
func (a *API) deleteConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "conversation")
	if !ok {
		return
	}
	if v := r.URL.Query().Get("erase"); v != "" {
		if erase, err := strconv.ParseBool(v); err != nil || (erase && a.cfg.Erase == nil) {
			WriteError(w, http.StatusBadRequest, fmt.Sprintf("erase %q: want true or false", v))
			return
		} else if erase {
			a.eraseConversation(w, r, id)
			return
		}
	}
	confirm := false
	var err error
	if v := r.URL.Query().Get("confirm"); v != "" {
		if confirm, err = strconv.ParseBool(v); err != nil {
			WriteError(w, http.StatusBadRequest, fmt.Sprintf("confirm %q: want true or false", v))
			return
		}
	}
	d, err := a.store.DeleteConversation(r.Context(), id, confirm)
	switch {
	case errors.Is(err, core.ErrNotFound):
		WriteError(w, http.StatusNotFound, fmt.Sprintf("conversation %d not found", id))
	case errors.Is(err, core.ErrBlockedByAutomations):
		autos := d.Automations
		if autos == nil {
			autos = []core.Automation{} // a list, never null
		}
		WriteJSON(w, http.StatusConflict, blockedResponse{BlockedByAutomations: true, Automations: autos})
	case err != nil:
		a.log.Error("deleting conversation", "conversation_id", id, "err", err)
		WriteError(w, http.StatusInternalServerError, "internal error: the conversation could not be deleted")
	default:
		WriteJSON(w, http.StatusOK, deletedResponse{Deleted: true, ID: id})
	}
}

// reload is POST /api/v1/reload: 200 with {"reloaded": what changed}, or
// 409 with the reason the new config was refused.
func (a *API) reload(w http.ResponseWriter, r *http.Request) {
	what, err := a.cfg.Reload(r.Context())
	if err != nil {
		WriteError(w, http.StatusConflict, "the config was not reloaded, the running one is kept: "+err.Error())
		return
	}
	WriteJSON(w, http.StatusOK, map[string]string{"reloaded": what})
}

// byPlatform indexes adapters by platform (the first of each), with the
// platforms sorted, for the error that names them.
func byPlatform(adapters []core.Adapter) (map[core.Platform]core.Adapter, []string) {
	m := map[core.Platform]core.Adapter{}
	var names []string
	for _, ad := range adapters {
		if _, dup := m[ad.Platform()]; !dup {
			m[ad.Platform()] = ad
			names = append(names, string(ad.Platform()))
		}
	}
	slices.Sort(names)
	return m, names
}
