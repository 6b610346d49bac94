package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/httpapi"
)

// UserData is what the console does with a user's own data (a copy,
// erasure) and with strangers' pairing codes; the app's. Nil: the console
// offers none of it.
type UserData interface {
	// Export is everything kept about a conversation's user, as files
	// (JSON and Markdown); core.ErrNotFound for an unknown id.
	Export(ctx context.Context, conversationID int64) ([]core.OutboundFile, error)
	// Erase deletes every row about a conversation's user, and reports
	// how many went.
	Erase(ctx context.Context, conversationID int64) (int64, error)
	// Waiting lists the pairing codes waiting for an owner, every bot's.
	Waiting(ctx context.Context, now time.Time) ([]access.Request, error)
	// Decide approves or denies a code (core.ErrNotFound when none
	// waits); a user let in is told.
	Decide(ctx context.Context, code string, approve bool) (access.Request, error)
}

// dataDesk is the console's actions on users' data and pairing codes.
type dataDesk struct{ s *Console }

// pairingItem is a code waiting on the overview.
type pairingItem struct {
	Code, Bot, Platform, UserID, Name, Asked, Expires string
}

// waiting is the overview's codes waiting for an owner, and the notice of
// the last decision.
func (s *reader) waiting(ctx context.Context, r *http.Request, now time.Time) ([]pairingItem, string, error) {
	if s.userData == nil {
		return nil, "", nil
	}
	ps, err := s.userData.Waiting(ctx, now)
	if err != nil {
		return nil, "", fmt.Errorf("reading pairing codes: %w", err)
	}
	out := make([]pairingItem, 0, len(ps))
	for _, p := range ps {
		if s.pick.id != "" && p.BotID != s.pick.id {
			continue
		}
		out = append(out, pairingItem{Code: p.Code, Bot: s.pick.of(p.BotID), Platform: p.Platform, UserID: p.UserID, Name: p.DisplayName,
			Asked: p.CreatedAt.In(s.loc).Format(timeLayout), Expires: p.ExpiresAt.In(s.loc).Format(timeLayout)})
	}
	// Only a code of the alphabet, and fixed words: the query never
	// becomes page text of its own.
	q := r.URL.Query()
	code := access.NormalizeCode(q.Get("code"))
	if len(code) != 8 || strings.Trim(code, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") != "" {
		return out, "", nil
	}
	switch q.Get("pairing") {
	case "approved":
		return out, "Code " + code + " approved: its user can talk to the bot now, and was told so.", nil
	case "denied":
		return out, "Code " + code + " denied.", nil
	case "gone":
		return out, "Code " + code + " is no longer waiting (answered already, or expired).", nil
	}
	return out, "", nil
}

// decidePairing is POST /console/pairing/{code}/approve and .../deny.
func (d dataDesk) decidePairing(w http.ResponseWriter, r *http.Request, _ session) {
	s := d.s
	code := access.NormalizeCode(r.PathValue("code"))
	approve := r.PathValue("verb") == "approve"
	if !approve && r.PathValue("verb") != "deny" {
		s.fail(w, r, http.StatusNotFound, "No such action.")
		return
	}
	result := "denied"
	if approve {
		result = "approved"
	}
	_, err := s.userData.Decide(r.Context(), code, approve)
	switch {
	case errors.Is(err, core.ErrNotFound):
		result = "gone"
	case err != nil:
		s.internal(w, r, "answering a pairing code", err)
		return
	default:
		s.log.Info("pairing code answered in the console", "code", code, "result", result, "remote", r.RemoteAddr)
	}
	http.Redirect(w, r, Prefix+"?"+url.Values{"pairing": {result}, "code": {code}}.Encode()+"#pairings", http.StatusSeeOther)
}

// exportConversation is GET /console/conversations/{id}/export?format=:
// the copy /export sends the user, as a download (json, or md).
func (d dataDesk) exportConversation(w http.ResponseWriter, r *http.Request, _ session) {
	s := d.s
	id, ok := s.pathID(w, r, "id", "conversation")
	if !ok {
		return
	}
	want := ".json"
	if r.URL.Query().Get("format") == "md" {
		want = ".md"
	}
	files, err := s.userData.Export(r.Context(), id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, "There is no conversation "+strconv.FormatInt(id, 10)+".")
		return
	case err != nil:
		s.internal(w, r, "exporting a conversation", err)
		return
	}
	if !httpapi.ServeFile(w, files, want) {
		s.internal(w, r, "exporting a conversation", fmt.Errorf("no %s file", want))
	}
}

// eraseConversation is POST /console/conversations/{id}/erase, with the
// form's confirm=erase: the user's erasure, as /erase does it.
func (d dataDesk) eraseConversation(w http.ResponseWriter, r *http.Request, _ session) {
	s := d.s
	id, ok := s.pathID(w, r, "id", "conversation")
	if !ok {
		return
	}
	if r.PostFormValue("confirm") != "erase" {
		s.fail(w, r, http.StatusBadRequest, "Tick the box that says you understand the erasure cannot be undone, then erase.")
		return
	}
	rows, err := s.userData.Erase(r.Context(), id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, "There is no conversation "+strconv.FormatInt(id, 10)+".")
		return
	case err != nil:
		s.internal(w, r, "erasing a conversation", err)
		return
	}
	s.log.Info("conversation erased in the console", "conversation_id", id, "rows", rows, "remote", r.RemoteAddr)
	q := url.Values{"erased": {strconv.FormatInt(id, 10)}, "rows": {strconv.FormatInt(rows, 10)}}
	http.Redirect(w, r, Prefix+"conversations?"+q.Encode(), http.StatusSeeOther)
}

// erasedNotice is the conversations list's word on an erasure just made:
// numbers only from the query.
func erasedNotice(q url.Values) string {
	id, err1 := strconv.ParseInt(q.Get("erased"), 10, 64)
	rows, err2 := strconv.ParseInt(q.Get("rows"), 10, 64)
	if err1 != nil || err2 != nil {
		return ""
	}
	return fmt.Sprintf("Conversation %d was erased: %d rows deleted.", id, rows)
}
