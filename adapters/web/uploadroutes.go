package web

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/httpapi"
)

// uploadRoutes serve POST /web/uploads and GET /web/uploads/{id}.
type uploadRoutes struct{ *routes }

// handleUpload is POST /web/uploads?client_id=…: the file is the body,
// its type the Content-Type, its name X-File-Name (URL-encoded). It
// passes the guards a message passes (same site, the address's and the
// client's rates) and answers 201 {"file_id", "name", "mime", "size"}, or
// 413 over adapters.web.uploads.max_bytes.
func (ur uploadRoutes) handleUpload(w http.ResponseWriter, r *http.Request) {
	h := ur.inboundHandler()
	if h == nil {
		writeError(w, http.StatusServiceUnavailable, "web chat is not running")
		return
	}
	max := ur.cfg.Uploads.MaxBytes
	if max <= 0 {
		writeError(w, http.StatusForbidden, "this chat takes no files")
		return
	}
	g := ur.guards()
	if !ur.sameSite(w, r, g) {
		return
	}
	p := post{h: h, g: g, addr: httpapi.ClientIP(r)}
	if ok, wait := g.msgIP.take(ipKey(p.addr), ur.clock.Now()); !ok {
		ur.refused(w, r, g, "messages_per_minute_per_ip", p.addr, wait,
			"Too many messages from your network: wait "+waitText(wait)+" and try again.")
		return
	}
	client := r.URL.Query().Get("client_id")
	if !ur.admitClient(w, r, p, client) {
		return
	}
	tooLarge := fmt.Sprintf("The file is larger than %s: send a smaller one.", core.ByteSize(max))
	if r.ContentLength > max {
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	}
	mimeType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	id, meta, err := uploadStore{ur.state}.save(client, fileName(r.Header.Get("X-File-Name")), mimeType, http.MaxBytesReader(w, r.Body, max+1))
	var mb *http.MaxBytesError
	switch {
	case errors.Is(err, core.ErrTooLarge) || errors.As(err, &mb):
		writeError(w, http.StatusRequestEntityTooLarge, tooLarge)
		return
	case errors.Is(err, errUploadsFull):
		ur.log.Warn("the web chat refused a file: its uploads are at adapters.web.uploads.max_total_bytes", "dir", ur.cfg.Uploads.Dir)
		writeError(w, http.StatusInsufficientStorage, "The chat cannot take more files right now: send your message without it.")
		return
	case errors.Is(err, errEmptyUpload):
		writeError(w, http.StatusBadRequest, "the file is empty")
		return
	case err != nil:
		ur.log.Error("keeping a file from the web chat", "client", client, "err", err)
		writeError(w, http.StatusInternalServerError, "could not keep the file")
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"file_id": id, "name": meta.Name, "mime": meta.MIME, "size": meta.Size})
}

// handleUploaded is GET /web/uploads/{id}?client_id=…: a file that client
// uploaded, for its pages to show.
func (ur uploadRoutes) handleUploaded(w http.ResponseWriter, r *http.Request) {
	g := ur.guards()
	if !ur.sameSite(w, r, g) {
		return
	}
	client, id := r.URL.Query().Get("client_id"), r.PathValue("id")
	st := uploadStore{ur.state}
	m, ok := st.meta(client, id)
	if !ok {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	data, err := os.ReadFile(st.path(client, id))
	if err != nil {
		writeError(w, http.StatusNotFound, "no such file")
		return
	}
	serveData(w, m.Name, m.MIME, data)
}
