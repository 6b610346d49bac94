package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FileUploads is the name the POSTs to an upload_url go by in the fault
// queue and in Calls: RateLimitNext(FileUploads, d),
// FailNextStatus(FileUploads, 503) and Calls(FileUploads) work as for a
// Web API method.
const FileUploads = "files.upload_url"

// Upload is a message files.completeUploadExternal made in a channel.
type Upload struct {
	Channel string // the channel_id it was shared to
	// TS is the message's ts. Slack does not return it to the uploader:
	// the message appears in the channel a moment later.
	TS string
	// Comment is initial_comment as sent (mrkdwn, &amp; &lt; &gt;
	// escaped by the client), "" for none.
	Comment string
	Files   []UploadedFile // in the order of completeUploadExternal's files
}

// UploadedFile is one file of an Upload.
type UploadedFile struct {
	ID    string // "F…", as getUploadURLExternal gave it
	Name  string // the filename given to getUploadURLExternal
	Title string // the title given to completeUploadExternal ("" for none)
	// AltText is getUploadURLExternal's alt_txt ("" for none).
	AltText string
	Data    []byte // the bytes POSTed to the upload_url
	// MIMEType is the file object's mimetype, which Slack works out
	// itself, as the fake does: from the name's extension, else from the
	// bytes. The uploader cannot give one.
	MIMEType string
}

// slackTypes are the mimetypes the fake knows by extension.
var slackTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".ogg": "audio/ogg", ".oga": "audio/ogg", ".opus": "audio/ogg", ".mp3": "audio/mpeg", ".m4a": "audio/mp4",
	".wav": "audio/wav", ".webm": "video/webm", ".mp4": "video/mp4", ".mov": "video/quicktime",
	".txt": "text/plain", ".md": "text/markdown", ".csv": "text/csv", ".json": "application/json",
	".pdf": "application/pdf", ".zip": "application/zip",
}

// mimeTypeOf is the mimetype Slack gives a file named name holding data.
func mimeTypeOf(name string, data []byte) string {
	if t, ok := slackTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	t, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	if t == "" {
		return "application/octet-stream"
	}
	return t
}

// Shown is how Slack shows the file in the channel: "image" (a preview
// of a PNG, JPEG, GIF or WebP), "audio" or "video" (with a player), else
// "file" (its name, to download).
func (f UploadedFile) Shown() string {
	switch t := f.MIMEType; {
	case t == "image/png" || t == "image/jpeg" || t == "image/gif" || t == "image/webp":
		return "image"
	case strings.HasPrefix(t, "audio/"):
		return "audio"
	case strings.HasPrefix(t, "video/"):
		return "video"
	}
	return "file"
}

// pendingUpload is a file between getUploadURLExternal and
// completeUploadExternal.
type pendingUpload struct {
	id, name, alt string
	length        int
	data          []byte
	uploaded      bool
}

// uploads is Slack's external upload flow: files.getUploadURLExternal,
// the POST to upload_url, files.completeUploadExternal.
type uploads struct {
	*state
	*delivery
	// pending are the files given an upload_url, by their key in it;
	// byID maps a file id to that key; completed are the completed uploads.
	// All under state.mu.
	pending   map[string]*pendingUpload
	byID      map[string]string
	completed []Upload
}

// maxFileAltText is the longest alt_txt of a file Slack takes.
const maxFileAltText = 1000

// filesGetUploadURLExternal answers an upload_url on the fake's own
// listener and a file id, as Slack does; filename and a positive length
// are required, alt_txt is at most 1,000 characters.
func (s *uploads) filesGetUploadURLExternal(p params) (result, string) {
	length, err := strconv.Atoi(p["length"])
	if strings.TrimSpace(p["filename"]) == "" || err != nil || length <= 0 || utf8.RuneCountInString(p["alt_txt"]) > maxFileAltText {
		return nil, "invalid_arguments"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFile++
	id := fmt.Sprintf("F0UPLD%05d", s.nextFile)
	key := randomHex(12)
	s.pending[key] = &pendingUpload{id: id, name: p["filename"], alt: p["alt_txt"], length: length}
	s.byID[id] = key
	return result{"upload_url": s.srv.URL + "/upload/v1/" + key, "file_id": id}, ""
}

// serveUpload takes POST /upload/v1/{key}: the file's bytes, raw or as a
// multipart form's first file. Slack answers 200 "OK - <length>"; the
// fake answers 404 for an unknown key and 400 when the bytes are not the
// length announced (Slack would fail the file later; the fake says so at
// once).
func (s *uploads) serveUpload(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls[FileUploads]++
	s.notify()
	s.mu.Unlock()
	if f := s.takeFault(FileUploads); f != nil {
		writeFault(w, f)
		return
	}
	data, err := uploadBody(w, r)
	if err != nil {
		http.Error(w, "bad upload: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	up := s.pending[r.PathValue("key")]
	switch {
	case up == nil:
		http.NotFound(w, r)
		return
	case len(data) != up.length:
		http.Error(w, fmt.Sprintf("length %d, not the %d announced", len(data), up.length), http.StatusBadRequest)
		return
	}
	up.data, up.uploaded = data, true
	s.notify()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "OK - %d", len(data))
}

// uploadBody reads an upload's bytes: a multipart form's first file, or
// the raw body.
func uploadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	ctype, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ctype != "multipart/form-data" {
		return io.ReadAll(r.Body)
	}
	if err := r.ParseMultipartForm(maxBody); err != nil {
		return nil, err
	}
	for _, fhs := range r.MultipartForm.File {
		if len(fhs) == 0 {
			continue
		}
		f, err := fhs[0].Open()
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		return io.ReadAll(f)
	}
	return nil, fmt.Errorf("no file in the form")
}

// filesCompleteUploadExternal completes uploaded files and, with a
// channel_id, shares them there as one message holding initial_comment
// (echoed as an event in a DM, as chat.postMessage's are).
// It answers the files as Slack does ([{id, title}]), without the
// message's ts.
func (s *uploads) filesCompleteUploadExternal(p params) (result, string) {
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if json.Unmarshal([]byte(p["files"]), &files) != nil || len(files) == 0 {
		return nil, "invalid_arguments"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	up := Upload{Comment: p["initial_comment"]}
	answer := make([]map[string]any, 0, len(files))
	for _, f := range files {
		pu := s.pending[s.byID[f.ID]]
		if pu == nil || !pu.uploaded {
			return nil, "file_not_found"
		}
		up.Files = append(up.Files, UploadedFile{ID: pu.id, Name: pu.name, Title: f.Title, AltText: pu.alt, Data: pu.data,
			MIMEType: mimeTypeOf(pu.name, pu.data)})
		answer = append(answer, map[string]any{"id": pu.id, "title": f.Title})
	}
	if ch := p["channel_id"]; ch != "" {
		if _, ok := s.channels[ch]; !ok {
			return nil, "not_in_channel"
		}
		if u, ok := s.dmUser[ch]; ok && s.blocked[u] {
			return nil, "is_archived"
		}
		up.Channel, up.TS = ch, s.nextTSLocked()
		s.completed = append(s.completed, up)
		s.echoUploadLocked(up)
	}
	for _, f := range files {
		delete(s.pending, s.byID[f.ID])
		delete(s.byID, f.ID)
	}
	s.notify()
	return result{"files": answer}, ""
}

// echoUploadLocked emits the message an upload made in a DM, as Slack
// does for message.im: subtype file_share, from the bot (WithEchoOwn).
// Callers hold s.mu.
func (s *uploads) echoUploadLocked(up Upload) {
	if !s.echo || s.channels[up.Channel] != channelIM {
		return
	}
	files := make([]any, len(up.Files))
	for i, f := range up.Files {
		files[i] = map[string]any{"id": f.ID, "name": f.Name, "title": f.Title, "size": len(f.Data), "mimetype": f.MIMEType,
			"user": botUserID, "mode": "hosted", "is_external": false}
	}
	m := s.botMessageLocked(up.Channel, up.Comment, up.TS, "")
	m["subtype"], m["files"], m["upload"] = "file_share", files, true
	m["event_ts"], m["channel_type"] = up.TS, channelIM
	s.emitLocked(mustJSON(m))
}

// Uploads returns the messages files.completeUploadExternal made in a
// channel, in order.
func (s *uploads) Uploads(channelID string) []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uploadsLocked(channelID)
}

func (s *uploads) uploadsLocked(channelID string) []Upload {
	var out []Upload
	for _, u := range s.completed {
		if u.Channel == channelID {
			u.Files = append([]UploadedFile(nil), u.Files...)
			out = append(out, u)
		}
	}
	return out
}

// WaitUploads waits until at least n uploads are in the channel and
// returns them all; it fails t after timeout.
func (s *uploads) WaitUploads(t testing.TB, channelID string, n int, timeout time.Duration) []Upload {
	t.Helper()
	s.waitFor(t, timeout,
		func() bool { return len(s.uploadsLocked(channelID)) >= n },
		func() string {
			return fmt.Sprintf("%d upload(s) in %s, got %d", n, channelID, len(s.Uploads(channelID)))
		})
	return s.Uploads(channelID)
}
