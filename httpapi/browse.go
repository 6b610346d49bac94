package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/parleybot/parley/core"
)

// Paging limits of the list endpoints.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

type conversationJSON struct {
	ID              int64   `json:"id"`
	Bot             string  `json:"bot,omitempty"`
	Platform        string  `json:"platform"`
	ChannelThreadID string  `json:"channel_thread_id"`
	ChannelUserID   string  `json:"channel_user_id"`
	DisplayName     string  `json:"display_name"`
	TimeZone        string  `json:"time_zone"`
	LastMessageAt   *string `json:"last_message_at"`
	CreatedAt       string  `json:"created_at"`
}

type messageJSON struct {
	ID        int64          `json:"id"`
	Seq       int64          `json:"seq"`
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	Source    string         `json:"source"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	CreatedAt string         `json:"created_at"`
}

type jobJSON struct {
	ID             int64   `json:"id"`
	ConversationID int64   `json:"conversation_id"`
	Kind           string  `json:"kind"`
	Status         string  `json:"status"`
	Name           string  `json:"name,omitempty"`
	Text           string  `json:"text"`
	Schedule       string  `json:"schedule,omitempty"`
	DueAt          string  `json:"due_at"`
	Attempts       int     `json:"attempts"`
	Error          string  `json:"error,omitempty"`
	Origin         string  `json:"origin,omitempty"`
	SentAt         *string `json:"sent_at"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func optTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := rfc3339(*t)
	return &s
}

// listConversations is GET /api/v1/conversations?limit=&offset=.
func (a *API) listConversations(w http.ResponseWriter, r *http.Request) {
	limit, offset, err := paging(r)
	if err != nil {
		a.refuse(w, err)
		return
	}
	v, err := listScope(a, r)
	if err != nil {
		a.refuse(w, err)
		return
	}
	cs, err := v.store.Conversations(r.Context(), limit, offset)
	if err != nil {
		a.fail(w, "listing conversations", err)
		return
	}
	out := make([]conversationJSON, len(cs))
	for i, c := range cs {
		out[i] = conversationJSON{ID: c.ID, Bot: c.BotID, Platform: string(c.Platform), ChannelThreadID: c.ChannelThreadID, ChannelUserID: c.ChannelUserID,
			DisplayName: c.DisplayName, TimeZone: c.TimeZone, LastMessageAt: optTime(c.LastMessageAt), CreatedAt: rfc3339(c.CreatedAt)}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"conversations": out})
}

// conversationMessages is GET /api/v1/conversations/{id}/messages
// ?after_seq=&limit=: its messages by seq.
func (a *API) conversationMessages(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "conversation")
	if !ok {
		return
	}
	limit, _, err := paging(r)
	if err != nil {
		a.refuse(w, err)
		return
	}
	after, err := queryInt(r, "after_seq", 0)
	if err != nil {
		a.refuse(w, err)
		return
	}
	if _, err := a.store.Conversation(r.Context(), id); err != nil {
		if errors.Is(err, core.ErrNotFound) {
			WriteError(w, http.StatusNotFound, fmt.Sprintf("conversation %d not found", id))
			return
		}
		a.fail(w, "reading a conversation", err)
		return
	}
	ms, err := a.store.MessagesPage(r.Context(), id, after, limit)
	if err != nil {
		a.fail(w, "reading messages", err)
		return
	}
	out := make([]messageJSON, len(ms))
	for i, m := range ms {
		out[i] = messageJSON{ID: m.ID, Seq: m.Seq, Role: string(m.Role), Content: m.Content, Source: string(m.Source),
			Metadata: m.Metadata, CreatedAt: rfc3339(m.CreatedAt)}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"conversation_id": id, "messages": out})
}

// listJobs is GET /api/v1/jobs?conversation_id=&status=&limit=, newest first.
func (a *API) listJobs(w http.ResponseWriter, r *http.Request) {
	limit, _, err := paging(r)
	if err != nil {
		a.refuse(w, err)
		return
	}
	conv, err := queryInt(r, "conversation_id", 0)
	if err != nil {
		a.refuse(w, err)
		return
	}
	status := core.JobStatus(r.URL.Query().Get("status"))
	switch status {
	case "", core.JobPending, core.JobSending, core.JobSent, core.JobCancelled, core.JobFailed:
	default:
		a.refuse(w, badRequest("status %q: want pending, sending, sent, cancelled or failed", status))
		return
	}
	v, err := listScope(a, r)
	if err != nil {
		a.refuse(w, err)
		return
	}
	js, err := v.store.Jobs(r.Context(), conv, status, limit)
	if err != nil {
		a.fail(w, "listing jobs", err)
		return
	}
	out := make([]jobJSON, len(js))
	for i, j := range js {
		out[i] = jobOf(j)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"jobs": out})
}

func jobOf(j core.Job) jobJSON {
	return jobJSON{ID: j.ID, ConversationID: j.ConversationID, Kind: string(j.Kind), Status: string(j.Status), Name: j.Name,
		Text: j.Text, Schedule: j.Recurrence, DueAt: rfc3339(j.DueAt), Attempts: j.Attempts, Error: j.LastError,
		Origin: j.Origin, SentAt: optTime(j.SentAt)}
}

// cancelJob is DELETE /api/v1/jobs/{id}: cancel a pending job (a message
// not sent yet, a recurring job).
func (a *API) cancelJob(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "job")
	if !ok {
		return
	}
	j, err := a.store.Job(r.Context(), id)
	if err == nil {
		j, err = a.store.CancelJob(r.Context(), j.ConversationID, id, "api")
	}
	switch {
	case errors.Is(err, core.ErrNotFound):
		WriteError(w, http.StatusNotFound, fmt.Sprintf("job %d not found", id))
	case errors.Is(err, core.ErrNotPending):
		WriteError(w, http.StatusConflict, fmt.Sprintf("job %d is %s: only a pending job can be cancelled", id, j.Status))
	case err != nil:
		a.fail(w, "cancelling a job", err)
	default:
		WriteJSON(w, http.StatusOK, jobOf(j))
	}
}

// pathID reads the {id} path value; a bad one is answered with 400.
func pathID(w http.ResponseWriter, r *http.Request, what string) (int64, bool) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		WriteError(w, http.StatusBadRequest, fmt.Sprintf("%s id %q is not a positive integer", what, raw))
		return 0, false
	}
	return id, true
}

// paging reads limit (1 to maxLimit, default defaultLimit) and offset.
func paging(r *http.Request) (int, int, error) {
	limit, err := queryInt(r, "limit", defaultLimit)
	if err != nil {
		return 0, 0, err
	}
	if limit < 1 || limit > maxLimit {
		return 0, 0, badRequest("limit %d: want 1 to %d", limit, maxLimit)
	}
	offset, err := queryInt(r, "offset", 0)
	if err != nil {
		return 0, 0, err
	}
	return int(limit), int(offset), nil
}

// queryInt reads a non-negative integer query parameter.
func queryInt(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("%s %q is not a non-negative integer", name, v)
	}
	return n, nil
}
