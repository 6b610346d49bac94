package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
)

// Files a user sends from the page (a photo, a document) are uploaded
// first, POST /web/uploads?client_id=… with the file as the body, and
// named in the message that carries them (POST /web/messages, "files").
// They are kept on disk, a directory per client under Uploads.Dir, and
// read back when a turn opens them (FetchAttachment): the web chat is its
// own platform, so it keeps what other platforms keep for the bot. An
// erasure (/erase) takes the client's directory with it (EraseThread).

// Uploads configures the files users send from the page.
type Uploads struct {
	// Dir keeps them (default: parley-web-uploads in the user's cache
	// directory, one directory per bot).
	Dir string `yaml:"dir"`
	// MaxBytes bounds one file (default 10 MiB; 0: the page takes no
	// files).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxTotalBytes bounds all the files kept, every client's (default
	// 1 GiB; 0: no bound): past it the page is told the chat takes no
	// more files for now, and nothing fills the disk.
	MaxTotalBytes int64 `yaml:"max_total_bytes"`
}

// Uploads.MaxBytes's and MaxTotalBytes's defaults.
const (
	DefaultUploadBytes      = 10 << 20
	DefaultUploadTotalBytes = 1 << 30
)

const (
	// maxFilesPerMessage bounds the files one message names.
	maxFilesPerMessage = 10
	// refPrefix starts an uploaded file's Ref: "upload:<client>/<id>".
	refPrefix = "upload:"
	// maxFileNameRunes caps a file's name as kept.
	maxFileNameRunes = 120
)

// uploadID is an uploaded file's id: 32 hex digits.
var uploadID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// errEmptyUpload is an upload without a byte; errUploadsFull one past
// Uploads.MaxTotalBytes.
var (
	errEmptyUpload = errors.New("the file is empty")
	errUploadsFull = errors.New("the chat keeps as many files as it may")
)

// uploadMeta is what is kept beside an uploaded file.
type uploadMeta struct {
	Name string `json:"name"`
	MIME string `json:"mime"`
	Size int64  `json:"size"`
}

// uploadStore keeps the uploaded files on disk.
type uploadStore struct{ *state }

// defaultUploadsDir is where uploads go when Uploads.Dir is not set.
func defaultUploadsDir(bot string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	if bot == "" {
		bot = "default"
	}
	return filepath.Join(base, "parley-web-uploads", bot)
}

// path is where file id of client is kept (and its meta, with ".json").
func (u uploadStore) path(client, id string) string {
	return filepath.Join(u.cfg.Uploads.Dir, client, id)
}

// save keeps body as a new file of client; it reads at most max bytes,
// and more is ErrTooLarge.
func (u uploadStore) save(client, name, mimeType string, body io.Reader) (string, uploadMeta, error) {
	max := u.cfg.Uploads.MaxBytes
	data, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return "", uploadMeta{}, fmt.Errorf("reading the upload: %w", err)
	}
	if int64(len(data)) > max {
		return "", uploadMeta{}, core.ErrTooLarge
	}
	if len(data) == 0 {
		return "", uploadMeta{}, errEmptyUpload
	}
	if mimeType == "" || mimeType == "application/octet-stream" {
		mimeType = http.DetectContentType(data)
	}
	meta := uploadMeta{Name: name, MIME: mimeType, Size: int64(len(data))}
	raw, _ := json.Marshal(meta)
	// The file and what is known of it count against the bound.
	size := int64(len(data) + len(raw))
	u.uploadsOnce.Do(func() { u.uploaded.Store(dirBytes(u.cfg.Uploads.Dir)) })
	if total := u.cfg.Uploads.MaxTotalBytes; u.uploaded.Add(size) > total && total > 0 {
		u.uploaded.Add(-size)
		return "", uploadMeta{}, errUploadsFull
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	p := u.path(client, id)
	err = os.MkdirAll(filepath.Dir(p), 0o700)
	if err == nil {
		err = os.WriteFile(p, data, 0o600)
	}
	if err == nil {
		err = os.WriteFile(p+".json", raw, 0o600)
	}
	if err != nil {
		_ = os.Remove(p)
		u.uploaded.Add(-size)
		return "", uploadMeta{}, fmt.Errorf("keeping the upload: %w", err)
	}
	return id, meta, nil
}

// meta reads what is kept of client's file id; false when it has none.
func (u uploadStore) meta(client, id string) (uploadMeta, bool) {
	if !uploadID.MatchString(id) || !clientIDPattern.MatchString(client) {
		return uploadMeta{}, false
	}
	raw, err := os.ReadFile(u.path(client, id) + ".json")
	if err != nil {
		return uploadMeta{}, false
	}
	var m uploadMeta
	return m, json.Unmarshal(raw, &m) == nil
}

// attachments are the files ids of client as a message's attachments; an
// id the client did not upload is an error.
func (u uploadStore) attachments(client string, ids []string) ([]core.Attachment, error) {
	if len(ids) > maxFilesPerMessage {
		return nil, fmt.Errorf("at most %d files a message", maxFilesPerMessage)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]core.Attachment, 0, len(ids))
	for _, id := range ids {
		m, ok := u.meta(client, id)
		if !ok {
			return nil, fmt.Errorf("no uploaded file %q: upload it first (POST /web/uploads)", id)
		}
		out = append(out, core.Attachment{Kind: core.KindOf(m.MIME), MIME: m.MIME, Size: m.Size, Name: m.Name,
			Ref: refPrefix + client + "/" + id})
	}
	return out, nil
}

// parseRef splits an uploaded file's Ref into its client and id.
func parseRef(ref string) (client, id string, ok bool) {
	rest, ok := strings.CutPrefix(ref, refPrefix)
	if !ok {
		return "", "", false
	}
	client, id, ok = strings.Cut(rest, "/")
	return client, id, ok && clientIDPattern.MatchString(client) && uploadID.MatchString(id)
}

// FetchAttachment reads a file a user uploaded from the page
// (core.AttachmentFetcher); over max bytes it is ErrTooLarge.
func (u uploadStore) FetchAttachment(_ context.Context, a core.Attachment, max int64) ([]byte, error) {
	client, id, ok := parseRef(a.Ref)
	if !ok {
		return nil, fmt.Errorf("fetching web upload: %q is no uploaded file's reference", a.Ref)
	}
	p := u.path(client, id)
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("fetching web upload %q: %w", a.Name, err)
	}
	if st.Size() > max {
		return nil, fmt.Errorf("fetching web upload %q: %d bytes, over %d: %w", a.Name, st.Size(), max, core.ErrTooLarge)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("fetching web upload %q: %w", a.Name, err)
	}
	return data, nil
}

// EraseThread deletes every file the client of thread uploaded: its
// conversation was erased (/erase).
func (u uploadStore) EraseThread(_ context.Context, thread string) error {
	if !clientIDPattern.MatchString(thread) {
		return nil
	}
	dir := filepath.Join(u.cfg.Uploads.Dir, thread)
	freed := dirBytes(dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("erasing the web chat's uploads of %s: %w", thread, err)
	}
	u.uploaded.Add(-freed)
	return nil
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// fileName is the name a page gave an upload (X-File-Name, URL-encoded),
// as kept: its base name, printable, bounded; "file" when none.
func fileName(header string) string {
	name, err := url.PathUnescape(header)
	if err != nil || !utf8.ValidString(name) {
		name = ""
	}
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, strings.TrimSpace(name))
	if r := []rune(name); len(r) > maxFileNameRunes {
		name = string(r[:maxFileNameRunes])
	}
	if name == "" || name == "." || name == "/" {
		return "file"
	}
	return name
}

// uploadFiles are a message's uploaded files as the page shows them.
func uploadFiles(client string, atts []core.Attachment) []wireFile {
	var out []wireFile
	for _, a := range atts {
		c, id, ok := parseRef(a.Ref)
		if !ok || c != client {
			continue
		}
		out = append(out, wireFile{Kind: string(a.Kind), Name: a.Name, MIME: a.MIME, Size: int(a.Size),
			URL: "/web/uploads/" + id + "?client_id=" + client})
	}
	return out
}
