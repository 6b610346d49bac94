package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/parleybot/parley/core"
)

// The console's actions on jobs: each answers with a redirect back to
// the page it came from and a notice (post/redirect/get).

// cancelJob is POST /console/jobs/{id}/cancel, and the conversation
// page's POST /console/conversations/{conv}/jobs/{id}/cancel (which only
// cancels a job of that conversation).
func (s *Console) cancelJob(w http.ResponseWriter, r *http.Request, _ session) {
	jobID, ok := s.pathID(w, r, "id", "job")
	if !ok {
		return
	}
	ctx := r.Context()
	var convID int64
	back := fmt.Sprintf("%sjobs/%d", Prefix, jobID)
	if raw := r.PathValue("conv"); raw != "" {
		if convID, ok = s.pathID(w, r, "conv", "conversation"); !ok {
			return
		}
		back = fmt.Sprintf("%sconversations/%d", Prefix, convID)
	} else {
		j, err := s.store.Job(ctx, jobID)
		switch {
		case errors.Is(err, core.ErrNotFound):
			s.redirectNotice(w, r, back, "not_found", jobID)
			return
		case err != nil:
			s.internal(w, r, "reading a job", err)
			return
		}
		convID = j.ConversationID
	}
	_, err := s.store.CancelJob(ctx, convID, jobID, CancelToolCallID)
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
	s.redirectNotice(w, r, back, result, jobID)
}

// retryJob is POST /console/jobs/{id}/retry: a failed job is due again
// now, a new attempt recorded as made from the console, and the
// scheduler is woken to send it.
func (s *Console) retryJob(w http.ResponseWriter, r *http.Request, _ session) {
	jobID, ok := s.pathID(w, r, "id", "job")
	if !ok {
		return
	}
	_, err := s.store.RetryJob(r.Context(), jobID, s.clock.Now().UTC(), RetriedBy)
	result := "retried"
	switch {
	case errors.Is(err, core.ErrNotFailed):
		result = "not_failed"
	case errors.Is(err, core.ErrNotFound):
		result = "not_found"
	case err != nil:
		s.internal(w, r, "retrying a job", err)
		return
	default:
		s.changed()
		s.log.Info("job retried in the console", "job_id", jobID, "remote", r.RemoteAddr)
	}
	s.redirectNotice(w, r, fmt.Sprintf("%sjobs/%d", Prefix, jobID), result, jobID)
}

// redirectNotice sends the browser back (post/redirect/get: a reload does
// not post again) to the form's "back" page, if it is a console page, or
// to def, with the result as a notice.
func (s *Console) redirectNotice(w http.ResponseWriter, r *http.Request, def, result string, jobID int64) {
	target := def
	if b := r.PostFormValue("back"); b != "" {
		target = safeNext(b)
	}
	u, err := url.Parse(target)
	if err != nil {
		u = &url.URL{Path: def}
	}
	q := u.Query()
	q.Set("notice", result)
	q.Set("job", strconv.FormatInt(jobID, 10))
	u.RawQuery = q.Encode()
	u.Fragment = "job-" + strconv.FormatInt(jobID, 10)
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// notice is the message a redirect after an action asks the page to
// show. Only fixed texts and a number: a query string never becomes page
// text. where says what "not found" means on the page ("" for the jobs
// pages).
func notice(q url.Values, where string) string {
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
		if where != "" {
			return "Job " + n + " is not a job of " + where + "."
		}
		return "There is no job " + n + "."
	case "retried":
		return "Job " + n + " will be tried again now."
	case "not_failed":
		return "Job " + n + " has not failed: nothing was retried."
	}
	return ""
}
