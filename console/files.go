package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/parleybot/parley/core"
)

// maxImageBytes bounds an image the console fetches for a thumbnail.
const maxImageBytes = 20 << 20

// fetchTimeout bounds the download of one image from its platform.
const fetchTimeout = 30 * time.Second

// imageTypes are the images a browser shows that cannot carry script:
// never SVG, whatever the platform says the file is.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// file is GET /console/conversations/{id}/files/{seq}/{n}: the n-th file
// of message seq, fetched from its platform through the adapter, served
// only if it is a raster image (by its bytes, not its name).
func (s *Console) file(w http.ResponseWriter, r *http.Request, _ session) {
	convID, ok := s.pathID(w, r, "id", "conversation")
	if !ok {
		return
	}
	seq, ok := s.pathID(w, r, "seq", "message")
	if !ok {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || s.fetch == nil {
		s.fail(w, r, http.StatusNotFound, "There is no such file.")
		return
	}
	ctx := r.Context()
	conv, err := s.store.Conversation(ctx, convID)
	if errors.Is(err, core.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "There is no such conversation.")
		return
	}
	if err != nil {
		s.internal(w, r, "reading a conversation", err)
		return
	}
	msgs, err := s.store.MessagesBetween(ctx, convID, seq-1, seq, 1)
	if err != nil {
		s.internal(w, r, "reading a message", err)
		return
	}
	if len(msgs) == 0 || n >= len(core.AttachmentsOf(msgs[0])) {
		s.fail(w, r, http.StatusNotFound, "There is no such file.")
		return
	}
	a := core.AttachmentsOf(msgs[0])[n]
	if a.Kind != core.AttachImage {
		s.fail(w, r, http.StatusNotFound, "Only images are shown in the console.")
		return
	}
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	data, err := s.fetch(fctx, conv.BotID, conv.Platform, a, maxImageBytes)
	if err != nil {
		s.log.Warn("console: fetching an image", "conversation_id", convID, "seq", seq, "err", err)
		s.fail(w, r, http.StatusBadGateway, "The image could not be fetched from "+string(conv.Platform)+".")
		return
	}
	ct := http.DetectContentType(data)
	if !imageTypes[ct] {
		s.fail(w, r, http.StatusUnsupportedMediaType, "The file is not an image the console shows.")
		return
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	// The browser may keep it for a while: the file does not change.
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	_, _ = w.Write(data)
}
