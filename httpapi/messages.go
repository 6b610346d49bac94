package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// Limits of a routed message.
const (
	// MaxTextRunes is the longest text (or caption) a routed message may have.
	MaxTextRunes = 1024
	// MaxAhead is how far ahead send_at may be.
	MaxAhead = 366 * 24 * time.Hour
	// sendAtSlack lets a send_at a little in the past (clocks differ) mean now.
	sendAtSlack = time.Minute
	// idempotencyWindow is how long an Idempotency-Key names its message.
	idempotencyWindow = 24 * time.Hour
	// maxKeyLen bounds an Idempotency-Key.
	maxKeyLen = 255
)

// routeRequest is the body of POST /api/v1/messages.
type routeRequest struct {
	ConversationID  *int64 `json:"conversation_id"`
	ChannelType     string `json:"channel_type"`
	ChannelThreadID string `json:"channel_thread_id"`
	ChannelUserID   string `json:"channel_user_id"`
	Origin          string `json:"origin"`
	// Bot names the bot that sends it (several bots: required unless
	// conversation_id says it).
	Bot      string `json:"bot"`
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	SendAt   string `json:"send_at"`
}

// messageStatus is a routed message as the API shows it.
type messageStatus struct {
	ID                int64  `json:"id"`
	Status            string `json:"status"`
	ConversationID    int64  `json:"conversation_id"`
	Type              string `json:"type,omitempty"`
	Origin            string `json:"origin,omitempty"`
	SendAt            string `json:"send_at,omitempty"`
	SentAt            string `json:"sent_at,omitempty"`
	Attempts          int    `json:"attempts"`
	Error             string `json:"error,omitempty"`
	PlatformMessageID string `json:"platform_message_id,omitempty"`
}

// apiError is a request refused with a status code and a message.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// postMessage is POST /api/v1/messages: a message into a user's DM, now or
// at send_at, through the job engine.
func (a *API) postMessage(w http.ResponseWriter, r *http.Request) {
	var req routeRequest
	if err := decodeBody(r, &req); err != nil {
		a.refuse(w, err)
		return
	}
	b, err := routeScope(a, r, req)
	if err != nil {
		a.refuse(w, err)
		return
	}
	b.route(w, r, req)
}

// route is postMessage on the API's view for the message's bot.
func (a *API) route(w http.ResponseWriter, r *http.Request, req routeRequest) {
	now := a.cfg.Now().UTC()
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(key) > maxKeyLen {
		a.refuse(w, badRequest("Idempotency-Key is longer than %d bytes", maxKeyLen))
		return
	}
	if !utf8.ValidString(key) {
		// Stored as text, which PostgreSQL takes only as UTF-8.
		a.refuse(w, badRequest("Idempotency-Key must be UTF-8 text"))
		return
	}
	if key != "" {
		// A repeat is answered before anything else: the first request
		// may have created the conversation, or the message been sent.
		if j, err := a.store.JobByIdempotencyKey(r.Context(), key, now.Add(-idempotencyWindow)); err == nil {
			a.repeat(w, r, key, j, req)
			return
		} else if !errors.Is(err, core.ErrNotFound) {
			a.fail(w, "looking up an idempotency key", err)
			return
		}
	}
	job, err := a.validate(req, now)
	if err != nil {
		a.refuse(w, err)
		return
	}
	conv, err := a.anchor(r, req, now)
	if err != nil {
		a.refuse(w, err)
		return
	}
	job.ConversationID, job.IdempotencyKey, job.CreatedAt = conv.ID, key, now
	created, err := a.store.RouteMessage(r.Context(), &job, a.cfg.MaxPending, now.Add(-idempotencyWindow))
	if err != nil {
		if errors.Is(err, core.ErrTooManyPending) {
			a.refuse(w, &apiError{http.StatusTooManyRequests,
				fmt.Sprintf("conversation %d already has %d messages waiting to be sent", conv.ID, a.cfg.MaxPending)})
			return
		}
		a.fail(w, "routing a message", err)
		return
	}
	if key != "" && !created {
		// A request with the same key committed first: job is its.
		a.repeat(w, r, key, job, req)
		return
	}
	a.cfg.JobsChanged()
	WriteJSON(w, http.StatusAccepted, statusOf(job))
}

// repeat answers a request whose Idempotency-Key already names job: 202
// with that job when the request is the same, 422 when it asks for
// something else, which would otherwise be dropped without a word.
func (a *API) repeat(w http.ResponseWriter, r *http.Request, key string, job core.Job, req routeRequest) {
	what, err := a.differs(r, job, req)
	if err != nil {
		a.refuse(w, err)
		return
	}
	if what != "" {
		a.refuse(w, &apiError{http.StatusUnprocessableEntity, fmt.Sprintf(
			"Idempotency-Key %q already names message %d, and this request differs from it in %s: "+
				"send a new key for a new message (a key names one request for 24 hours)", key, job.ID, what)})
		return
	}
	WriteJSON(w, http.StatusAccepted, statusOf(job))
}

// differs says in what req asks for something other than job, the
// message its key already made ("" when nothing): its text, type,
// image, origin, recipient or send_at. send_at is compared while the
// message still waits for its first attempt; after that its due time
// moves with the retries, and the message is going out anyway.
func (a *API) differs(r *http.Request, job core.Job, req routeRequest) (string, error) {
	want, err := a.content(req)
	if err != nil {
		return "", err
	}
	switch {
	case want.Text != job.Text:
		return "text", nil
	case want.Format != job.Format || want.ImageURL != job.ImageURL:
		return "type or image_url", nil
	case want.Origin != job.Origin:
		return "origin", nil
	}
	if job.Status == core.JobPending && job.Attempts == 0 && job.RetriedAt == nil {
		at := job.CreatedAt // no send_at: now
		if req.SendAt != "" {
			t, err := time.Parse(time.RFC3339, req.SendAt)
			if err != nil {
				return "", badRequest("send_at %q is not an RFC 3339 time like 2026-11-24T09:00:00+01:00", req.SendAt)
			}
			if t.After(job.CreatedAt) {
				at = t
			}
		}
		if d := at.Sub(job.DueAt); d >= time.Second || d <= -time.Second {
			return "send_at", nil
		}
	}
	same, err := a.sameRecipient(r, job, req)
	if err != nil || same {
		return "", err
	}
	return "recipient", nil
}

// sameRecipient reports whether req names job's conversation.
func (a *API) sameRecipient(r *http.Request, job core.Job, req routeRequest) (bool, error) {
	byChannel := req.ChannelType != "" || req.ChannelThreadID != "" || req.ChannelUserID != ""
	switch {
	case req.ConversationID != nil && byChannel:
		return false, badRequest("give conversation_id or channel_type with channel_thread_id/channel_user_id, not both")
	case req.ConversationID != nil:
		return *req.ConversationID == job.ConversationID, nil
	case !byChannel:
		return false, badRequest("no anchor: give conversation_id, or channel_type with channel_thread_id/channel_user_id")
	}
	conv, err := a.store.Conversation(r.Context(), job.ConversationID)
	if errors.Is(err, core.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return string(conv.Platform) == req.ChannelType &&
		(req.ChannelThreadID == "" || req.ChannelThreadID == conv.ChannelThreadID) &&
		(req.ChannelUserID == "" || req.ChannelUserID == conv.ChannelUserID), nil
}

// validate checks everything of a request but its anchor and makes the job.
func (a *API) validate(req routeRequest, now time.Time) (core.Job, error) {
	job, err := a.content(req)
	if err != nil {
		return job, err
	}
	job.DueAt = now
	if req.SendAt != "" {
		at, err := time.Parse(time.RFC3339, req.SendAt)
		switch {
		case err != nil:
			return job, badRequest("send_at %q is not an RFC 3339 time like 2026-11-24T09:00:00+01:00", req.SendAt)
		case at.Before(now.Add(-sendAtSlack)):
			return job, badRequest("send_at %s is in the past (it is now %s)", at.UTC().Format(time.RFC3339), now.Format(time.RFC3339))
		case at.Sub(now) > MaxAhead:
			return job, badRequest("send_at %s is more than a year ahead", at.UTC().Format(time.RFC3339))
		}
		if at.After(now) {
			job.DueAt = at.UTC()
		}
	}
	return job, nil
}

// content checks what a request sends (origin, type, text, image) and
// makes the job of it, without its anchor or due time. The text is
// cleaned as inbound text is: a NUL, which PostgreSQL's text refuses,
// becomes U+FFFD.
func (a *API) content(req routeRequest) (core.Job, error) {
	job := core.Job{Kind: core.JobMessage, Name: "routed message", Text: core.StorableText(strings.TrimSpace(req.Text))}
	for _, f := range []struct{ name, v string }{{"channel_thread_id", req.ChannelThreadID}, {"channel_user_id", req.ChannelUserID}} {
		if strings.ContainsRune(f.v, 0) || !utf8.ValidString(f.v) {
			return job, badRequest("%s must be valid UTF-8 without NUL characters", f.name)
		}
	}
	switch req.Origin {
	case "api", "connector", "system":
		job.Origin = req.Origin
	case "":
		job.Origin = "api"
	default:
		return job, badRequest("origin %q: want api, connector or system", req.Origin)
	}
	n := utf8.RuneCountInString(job.Text)
	switch req.Type {
	case "", "text":
	case "rich_text":
		job.Format = core.FormatRichText
	case "image":
		u, err := url.Parse(req.ImageURL)
		if req.ImageURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return job, badRequest("image_url %q: an image needs an absolute http(s) URL", req.ImageURL)
		}
		job.ImageURL = req.ImageURL
		if n > MaxTextRunes {
			return job, badRequest("text (the caption) has %d characters, at most %d", n, MaxTextRunes)
		}
	default:
		return job, badRequest("type %q: want text, rich_text or image", req.Type)
	}
	if req.Type != "image" {
		if req.ImageURL != "" {
			return job, badRequest("image_url is for messages of type image")
		}
		if n == 0 || n > MaxTextRunes {
			return job, badRequest("text has %d characters: it must have 1 to %d", n, MaxTextRunes)
		}
	}
	return job, nil
}

// anchor finds the conversation a request names, or creates it for a
// user the bot has not talked with yet, through the platform's adapter.
func (a *API) anchor(r *http.Request, req routeRequest, now time.Time) (core.Conversation, error) {
	byChannel := req.ChannelType != "" || req.ChannelThreadID != "" || req.ChannelUserID != ""
	switch {
	case req.ConversationID != nil && byChannel:
		return core.Conversation{}, badRequest("give conversation_id or channel_type with channel_thread_id/channel_user_id, not both")
	case req.ConversationID != nil:
		conv, err := a.store.Conversation(r.Context(), *req.ConversationID)
		if errors.Is(err, core.ErrNotFound) {
			return conv, &apiError{http.StatusNotFound, fmt.Sprintf("conversation %d not found", *req.ConversationID)}
		}
		return conv, err
	case !byChannel:
		return core.Conversation{}, badRequest("no anchor: give conversation_id, or channel_type with channel_thread_id/channel_user_id")
	case req.ChannelType == "":
		return core.Conversation{}, badRequest("channel_type is required with channel_thread_id/channel_user_id")
	case req.ChannelThreadID == "" && req.ChannelUserID == "":
		return core.Conversation{}, badRequest("give channel_thread_id or channel_user_id with channel_type")
	}
	// The platforms are those of the enabled adapters, whatever they are:
	// a message the bot could not send is refused now, not left pending.
	p := core.Platform(req.ChannelType)
	ad, ok := a.adapters[p]
	if !ok {
		if len(a.platforms) == 0 {
			return core.Conversation{}, badRequest("channel_type %q: no adapter is enabled", req.ChannelType)
		}
		return core.Conversation{}, badRequest("channel_type %q is not the platform of an enabled adapter: want %s",
			req.ChannelType, orList(a.platforms))
	}
	if req.ChannelThreadID != "" {
		conv, err := a.store.ConversationByThread(r.Context(), p, req.ChannelThreadID)
		if err == nil || !errors.Is(err, core.ErrNotFound) {
			return conv, err
		}
	}
	opener, ok := ad.(core.ConversationOpener)
	if !ok {
		return core.Conversation{}, &apiError{http.StatusUnprocessableEntity,
			fmt.Sprintf("%s conversations start when the user writes: there is none at channel_thread_id %q", p, req.ChannelThreadID)}
	}
	opened, err := opener.OpenConversation(r.Context(), core.OpenRequest{ChannelThreadID: req.ChannelThreadID, ChannelUserID: req.ChannelUserID})
	if err != nil {
		if errors.Is(err, core.ErrUnreachable) || errors.Is(err, core.ErrBadAddress) {
			return core.Conversation{}, &apiError{http.StatusUnprocessableEntity, err.Error()}
		}
		return core.Conversation{}, &apiError{http.StatusBadGateway, fmt.Sprintf("opening a %s conversation: %v", p, err)}
	}
	return a.store.EnsureConversation(r.Context(), core.InboundRecord{Platform: p, ChannelThreadID: opened.ChannelThreadID,
		ChannelUserID: opened.ChannelUserID, DisplayName: opened.DisplayName, TimeZone: a.cfg.TimeZone, Now: now})
}

// getMessage is GET /api/v1/messages/{id}: a routed message's status.
func (a *API) getMessage(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "message")
	if !ok {
		return
	}
	j, err := a.store.Job(r.Context(), id)
	if errors.Is(err, core.ErrNotFound) || (err == nil && j.Kind != core.JobMessage) {
		WriteError(w, http.StatusNotFound, fmt.Sprintf("message %d not found", id))
		return
	}
	if err != nil {
		a.fail(w, "reading a message", err)
		return
	}
	WriteJSON(w, http.StatusOK, statusOf(j))
}

func statusOf(j core.Job) messageStatus {
	m := messageStatus{ID: j.ID, Status: string(j.Status), ConversationID: j.ConversationID, Origin: j.Origin,
		Attempts: j.Attempts, PlatformMessageID: j.PlatformMessageID, SendAt: j.DueAt.UTC().Format(time.RFC3339)}
	switch {
	case j.ImageURL != "":
		m.Type = "image"
	case j.Format == core.FormatRichText:
		m.Type = "rich_text"
	default:
		m.Type = "text"
	}
	if j.SentAt != nil {
		m.SentAt = j.SentAt.UTC().Format(time.RFC3339)
	}
	if j.Status == core.JobFailed || j.Status == core.JobCancelled || j.Status == core.JobPending {
		m.Error = j.LastError
	}
	return m
}

// decodeBody reads a JSON body into v: unknown fields, trailing data and a
// body over MaxBodyBytes are errors that say so.
func decodeBody(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &apiError{http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over %d bytes", tooBig.Limit)}
	}
	if err != nil {
		return badRequest("reading the body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("the body is not the JSON expected: %v", err)
	}
	// More would miss a stray '}' or ']': only the end of the body may
	// follow the value.
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

// refuse answers a request error; anything else is a server failure.
func (a *API) refuse(w http.ResponseWriter, err error) {
	var ae *apiError
	if errors.As(err, &ae) {
		WriteError(w, ae.code, ae.msg)
		return
	}
	a.fail(w, "handling a request", err)
}

// StoreRetryAfter is the Retry-After of a request refused because the
// store cannot take writes now (a full disk, a database gone).
const StoreRetryAfter = 5 * time.Second

// fail logs a server-side failure and answers 500 without its details;
// a store that cannot take writes (core.ErrStoreUnavailable) is 503 with
// Retry-After, since the same request can succeed later.
func (a *API) fail(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, core.ErrStoreUnavailable) {
		if ok, held := a.unavailableNotice(a.cfg.Now()); ok {
			a.log.Error(what+": the store cannot take writes", "err", err, "refusals_not_logged", held)
		}
		w.Header().Set("Retry-After", RetryAfter(StoreRetryAfter))
		WriteError(w, http.StatusServiceUnavailable, "the store cannot take writes now: "+what+" failed; try again in "+
			RetryAfter(StoreRetryAfter)+" s")
		return
	}
	a.log.Error(what, "err", err)
	WriteError(w, http.StatusInternalServerError, "internal error: "+what+" failed")
}

// unavailableNotice reports whether to log a refusal for an unavailable
// store now, and how many went unlogged since the last one.
func (a *API) unavailableNotice(now time.Time) (bool, int) {
	u := a.unavailable
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.logged.IsZero() && now.Sub(u.logged) < time.Minute {
		u.held++
		return false, 0
	}
	held := u.held
	u.logged, u.held = now, 0
	return true, held
}

// orList joins names as a sentence does: "web", "telegram or web",
// "discord, telegram or web".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
