package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/parleybot/parley/core"
)

// The files the bot sends are kept in memory for the pages to load, the
// newest up to shelfBytes in all: GET /web/files/{id}?client_id=… serves
// one to its client's pages only. A page loaded after a file left the
// shelf shows its name without it.
const shelfBytes = 64 << 20

// wireFile is a file of a message as the page shows it: a picture
// inline, audio with a player, anything else as a download.
type wireFile struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	MIME string `json:"mime"`
	Size int    `json:"size"`
	URL  string `json:"url"`
}

// shelfFile is one file on the shelf, and whose it is.
type shelfFile struct {
	thread string
	file   core.OutboundFile
}

// shelf holds the files sent, oldest first, within shelfBytes.
type shelf struct {
	mu    sync.Mutex
	files map[string]shelfFile
	order []string
	bytes int
}

// put keeps f for thread's pages, dropping the oldest files past
// shelfBytes, and returns its id (random: it is in the URL).
func (s *shelf) put(thread string, f core.OutboundFile) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]shelfFile{}
	}
	s.files[id] = shelfFile{thread: thread, file: f}
	s.order = append(s.order, id)
	s.bytes += len(f.Data)
	for s.bytes > shelfBytes && len(s.order) > 1 {
		old := s.order[0]
		s.bytes -= len(s.files[old].file.Data)
		delete(s.files, old)
		s.order = s.order[1:]
	}
	return id
}

// get returns file id when it is thread's.
func (s *shelf) get(id, thread string) (core.OutboundFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok || f.thread != thread {
		return core.OutboundFile{}, false
	}
	return f.file, true
}

// Interface guard.
var _ core.FileSender = (*Adapter)(nil)

// SendFiles pushes msg as Send does, with its files under the last part
// for the page to show (core.FileSender): pictures inline, audio with a
// player, anything else as a download link.
func (sd *sender) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if msg.ChannelThreadID == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "no channel thread id"}
	}
	files := make([]wireFile, 0, len(msg.Files))
	for _, f := range msg.Files {
		if len(f.Data) == 0 {
			return core.SendResult{}, &core.PermanentError{Reason: fmt.Sprintf("file %q is empty", f.Name)}
		}
		id := sd.files.put(msg.ChannelThreadID, f)
		files = append(files, wireFile{Kind: string(f.Kind), Name: f.Name, MIME: f.MIME, Size: len(f.Data),
			URL: "/web/files/" + id + "?client_id=" + msg.ChannelThreadID})
	}
	return sd.pushWith(ctx, msg, "", files)
}

// shownInline are the types a page may show as they are; any other is
// served as a download (an SVG or HTML file could run script).
var shownInline = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
	"audio/ogg": true, "audio/mpeg": true, "audio/mp4": true, "audio/wav": true, "audio/webm": true,
}

// handleFile is GET /web/files/{id}?client_id=…: a file the bot sent to
// that client, from the shelf.
func (rt *routes) handleFile(w http.ResponseWriter, r *http.Request) {
	g := rt.guards()
	if !rt.sameSite(w, r, g) {
		return
	}
	clientID := r.URL.Query().Get("client_id")
	if !clientIDPattern.MatchString(clientID) {
		writeError(w, http.StatusBadRequest, "client_id must be 8 to 64 letters, digits, '-' or '_'")
		return
	}
	f, ok := rt.files.get(r.PathValue("id"), clientID)
	if !ok {
		writeError(w, http.StatusNotFound, "no such file: the chat keeps the newest files it sent, in memory, until it restarts")
		return
	}
	serveData(w, f.Name, f.MIME, f.Data)
}

// serveData answers with a file's bytes: a type the page may show as
// itself (shownInline) inline, any other as a download, never sniffed,
// never run.
func serveData(w http.ResponseWriter, name, mimeType string, data []byte) {
	typ, _, _ := mime.ParseMediaType(mimeType)
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, max-age=86400")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	disposition := "inline"
	if !shownInline[strings.ToLower(typ)] {
		typ, disposition = "application/octet-stream", "attachment"
	}
	h.Set("Content-Type", typ)
	if d := mime.FormatMediaType(disposition, map[string]string{"filename": name}); d != "" {
		disposition = d
	} // else a name no header can carry: the browser names it
	h.Set("Content-Disposition", disposition)
	_, _ = w.Write(data)
}
