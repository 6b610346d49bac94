package httpapi

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/parleybot/parley/core"
)

// exportConversation is GET /api/v1/conversations/{id}/export[?format=md]:
// everything kept about the conversation's user (what /export sends
// them), as a JSON download, or the readable Markdown transcript.
func (a *API) exportConversation(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "conversation")
	if !ok {
		return
	}
	want := ".json"
	switch f := r.URL.Query().Get("format"); f {
	case "", "json":
	case "md", "markdown":
		want = ".md"
	default:
		WriteError(w, http.StatusBadRequest, fmt.Sprintf("format %q: want json or md", f))
		return
	}
	files, err := a.cfg.Export(r.Context(), id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		WriteError(w, http.StatusNotFound, fmt.Sprintf("conversation %d not found", id))
		return
	case err != nil:
		a.log.Error("exporting a conversation", "conversation_id", id, "err", err)
		WriteError(w, http.StatusInternalServerError, "internal error: the conversation could not be exported")
		return
	}
	if !ServeFile(w, files, want) {
		WriteError(w, http.StatusInternalServerError, "internal error: the export has no "+want+" file")
	}
}

// ServeFile writes, as a download, the first of files whose name ends
// with suffix; false when none does.
func ServeFile(w http.ResponseWriter, files []core.OutboundFile, suffix string) bool {
	for _, f := range files {
		if strings.HasSuffix(f.Name, suffix) {
			w.Header().Set("Content-Type", f.MIME)
			w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.Name}))
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(f.Data)
			return true
		}
	}
	return false
}

// eraseConversation is DELETE /api/v1/conversations/{id}?erase=true: the
// user's erasure, as /erase does it, whatever jobs the conversation has.
func (a *API) eraseConversation(w http.ResponseWriter, r *http.Request, id int64) {
	rows, err := a.cfg.Erase(r.Context(), id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		WriteError(w, http.StatusNotFound, fmt.Sprintf("conversation %d not found", id))
	case err != nil:
		a.log.Error("erasing a conversation", "conversation_id", id, "err", err)
		WriteError(w, http.StatusInternalServerError, "internal error: the conversation could not be erased")
	default:
		WriteJSON(w, http.StatusOK, erasedResponse{Erased: true, ID: id, Rows: rows})
	}
}

type erasedResponse struct {
	Erased bool  `json:"erased"`
	ID     int64 `json:"id"`
	Rows   int64 `json:"rows"`
}
