package slacktest

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// fileStore holds the files users share and serves their downloads.
type fileStore struct {
	*state
	*delivery
}

// FileDownloads is the name file downloads go by in the fault queue and
// in Calls: RateLimitNext(FileDownloads, d), FailNextStatus(FileDownloads,
// 503) and Calls(FileDownloads) work as for a Web API method.
const FileDownloads = "files.download"

// loginPage is what Slack serves for a file URL without a token that may
// read it: a 200 HTML page, not an error status.
const loginPage = `<!DOCTYPE html><html><head><title>Slack</title></head><body><h1>Sign in to Fake</h1><form action="/signin"></form></body></html>`

// File is a file a user shares in a DM (ShareFile).
type File struct {
	// Name is the file name ("cat.png"); its extension gives filetype.
	Name string
	// MIME is the mimetype ("image/png"); "" is application/octet-stream.
	MIME string
	// Data are the bytes the fake serves for it.
	Data []byte
	// Text is the message sent with the file ("" for none), written as
	// Slack would (&amp; &lt; &gt; escaped).
	Text string
	// VoiceClip marks an audio clip recorded in Slack's composer (file
	// subtype "slack_audio", media_display_type "audio") rather than an
	// uploaded audio file.
	VoiceClip bool
	// Width and Height are an image's original_w and original_h.
	Width, Height int
	// UnknownSize sends size 0 in the event and serves the download
	// without a Content-Length, so that a client can only find the size
	// by reading.
	UnknownSize bool
}

// Shared is a file ShareFile shared.
type Shared struct {
	Channel string // the DM's channel id
	TS      string // the message's ts
	FileID  string // "F…"
	// URL is its url_private_download (and url_private), on the fake's
	// origin: URL()/files-pri/<team>-<id>/download/<name>.
	URL string
}

// storedFile is a file the fake serves.
type storedFile struct {
	mime    string
	data    []byte
	chunked bool
}

// ShareFile makes a user share f in their DM with the bot: a message
// event with subtype "file_share" and the file in "files", delivered
// like SendDM's (Socket Mode or the Events API). The fake then serves
// f.Data at the file's URL to a GET with "Authorization: Bearer <bot
// token>"; without it (or after SetFilesScope(false)) it answers 200 with
// an HTML login page, as Slack does.
func (s *fileStore) ShareFile(from User, f File) Shared {
	if f.MIME == "" {
		f.MIME = "application/octet-stream"
	}
	if f.Name == "" {
		f.Name = "file"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addUserLocked(from)
	chID, _ := s.dmLocked(from.ID)
	s.nextFile++
	id := fmt.Sprintf("F0FILE%05d", s.nextFile)
	u := fmt.Sprintf("%s/files-pri/%s-%s/download/%s", s.srv.URL, teamID, id, url.PathEscape(f.Name))
	s.files[teamID+"-"+id] = &storedFile{mime: f.MIME, data: append([]byte(nil), f.Data...), chunked: f.UnknownSize}

	ts := s.nextTSLocked()
	size := len(f.Data)
	if f.UnknownSize {
		size = 0
	}
	file := map[string]any{
		"id":                   id,
		"created":              s.now().Unix(),
		"timestamp":            s.now().Unix(),
		"name":                 f.Name,
		"title":                f.Name,
		"mimetype":             f.MIME,
		"filetype":             strings.TrimPrefix(path.Ext(f.Name), "."),
		"pretty_type":          strings.ToUpper(strings.TrimPrefix(path.Ext(f.Name), ".")),
		"user":                 from.ID,
		"user_team":            teamID,
		"mode":                 "hosted",
		"editable":             false,
		"is_external":          false,
		"external_type":        "",
		"size":                 size,
		"url_private":          u,
		"url_private_download": u,
		"permalink":            fmt.Sprintf("%sfiles/%s/%s/%s", teamURL, from.ID, id, url.PathEscape(f.Name)),
	}
	if f.Width > 0 && f.Height > 0 {
		file["original_w"], file["original_h"] = f.Width, f.Height
	}
	if f.VoiceClip {
		file["subtype"], file["media_display_type"] = "slack_audio", "audio"
	}
	s.inbound[chID+"/"+ts] = f.Text
	s.emitLocked(mustJSON(map[string]any{
		"type":           "message",
		"subtype":        "file_share",
		"text":           f.Text,
		"files":          []any{file},
		"upload":         true,
		"user":           from.ID,
		"display_as_bot": false,
		"ts":             ts,
		"team":           teamID,
		"channel":        chID,
		"event_ts":       ts,
		"channel_type":   channelIM,
	}))
	return Shared{Channel: chID, TS: ts, FileID: id, URL: u}
}

// FailNextDownloads makes the next n file downloads answer HTTP 500 with
// an HTML body, then serve again. They join FileDownloads' fault queue.
func (s *fileStore) FailNextDownloads(n int) {
	for range n {
		s.addFault(FileDownloads, &fault{status: http.StatusInternalServerError})
	}
}

// SetFilesScope sets whether the bot token may read files (default
// true). Without the files:read scope Slack answers a download with its
// HTML login page.
func (s *fileStore) SetFilesScope(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noFilesScope = !ok
}

// serveFile serves GET /files-pri/<team>-<id>/download/<name>.
func (s *fileStore) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls[FileDownloads]++
	s.notify()
	s.mu.Unlock()
	if f := s.takeFault(FileDownloads); f != nil {
		writeFault(w, f)
		return
	}
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	file := s.files[r.PathValue("file")]
	allowed := token == s.botToken && !s.revoked && !s.noFilesScope
	s.mu.Unlock()
	if !allowed {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(loginPage))
		return
	}
	if file == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", file.mime)
	if !file.chunked {
		w.Header().Set("Content-Length", strconv.Itoa(len(file.data)))
		_, _ = w.Write(file.data)
		return
	}
	// Flushing before the end makes net/http send it chunked, without a
	// Content-Length.
	half := len(file.data) / 2
	_, _ = w.Write(file.data[:half])
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	_, _ = w.Write(file.data[half:])
}
