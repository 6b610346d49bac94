package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// upload POSTs data as a file of client, named name, of type typ, and
// returns the answer.
func (b *testBundle) upload(t *testing.T, client, name, typ string, data []byte) apiResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/web/uploads?client_id="+url.QueryEscape(client), bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Content-Type", typ)
	req.Header.Set("X-File-Name", url.PathEscape(name))
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out := apiResponse{Status: resp.StatusCode, Header: resp.Header}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out.Body))
	return out
}

// A user sends a photo and a document from the page: each is uploaded,
// then named in the message; the core gets them as attachments, reads
// them back through the adapter, and the history shows them to their
// client's pages only.
func TestFilesFromThePage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	png := []byte("\x89PNG\r\n\x1a\n-not-a-real-image")
	photo := b.upload(t, "client-0001", "cat 🐈.png", "image/png", png)
	require.Equal(t, http.StatusCreated, photo.Status, photo.Body)
	require.Equal(t, "cat 🐈.png", photo.Body["name"])
	require.Equal(t, "image/png", photo.Body["mime"])
	require.EqualValues(t, len(png), photo.Body["size"])
	doc := b.upload(t, "client-0001", "../../etc/notes.txt", "", []byte("buy milk\n"))
	require.Equal(t, http.StatusCreated, doc.Status, doc.Body)
	require.Equal(t, "notes.txt", doc.Body["name"], "a base name only")
	require.Equal(t, "text/plain; charset=utf-8", doc.Body["mime"], "sniffed when the page gave no type")

	res := b.postJSON(t, map[string]any{"client_id": "client-0001", "text": "", "files": []string{photo.Body["file_id"].(string), doc.Body["file_id"].(string)}})
	require.Equal(t, http.StatusAccepted, res.Status, res.Body)
	got := (<-b.core.received)
	require.Len(t, got.Attachments, 2)
	require.Equal(t, core.AttachImage, got.Attachments[0].Kind)
	require.Equal(t, core.AttachDocument, got.Attachments[1].Kind)
	data, err := b.adapter.FetchAttachment(context.Background(), got.Attachments[0], 1<<20)
	require.NoError(t, err)
	require.Equal(t, png, data)
	_, err = b.adapter.FetchAttachment(context.Background(), got.Attachments[0], 5)
	require.ErrorIs(t, err, core.ErrTooLarge)

	// The page shows its own files; another client's page cannot get them.
	status, hdr, body := b.get(t, "/web/uploads/"+photo.Body["file_id"].(string)+"?client_id=client-0001")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "image/png", hdr.Get("Content-Type"))
	require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"))
	require.Equal(t, string(png), body)
	status, _, _ = b.get(t, "/web/uploads/"+photo.Body["file_id"].(string)+"?client_id=client-0002")
	require.Equal(t, http.StatusNotFound, status)
	b.core.mu.Lock()
	b.core.history = []core.Message{{ID: 1, Seq: 1, Role: core.RoleUser, Content: "", CreatedAt: time.Now(),
		Metadata: map[string]any{"attachments": got.Attachments}}}
	b.core.mu.Unlock()
	_, _, hist := b.get(t, "/web/history?client_id=client-0001")
	require.Contains(t, hist, `"url":"/web/uploads/`+photo.Body["file_id"].(string)+`?client_id=client-0001"`)
	require.Contains(t, hist, `"name":"notes.txt"`)

	// Erased with the conversation.
	require.NoError(t, b.adapter.EraseThread(context.Background(), "client-0001"))
	_, err = b.adapter.FetchAttachment(context.Background(), got.Attachments[0], 1<<20)
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(b.adapter.Uploads.Dir, "client-0001"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// What the chat refuses: a file over uploads.max_bytes (413, nothing
// kept), an empty one, a message naming a file its client did not upload,
// and any file when uploads are off.
func TestUploadRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.adapter.Uploads.MaxBytes = 16
	res := b.upload(t, "client-0001", "big.bin", "application/octet-stream", bytes.Repeat([]byte("x"), 17))
	require.Equal(t, http.StatusRequestEntityTooLarge, res.Status)
	require.Equal(t, "The file is larger than 16 bytes: send a smaller one.", res.Body["error"])
	entries, _ := os.ReadDir(b.adapter.Uploads.Dir)
	for _, e := range entries {
		files, _ := os.ReadDir(filepath.Join(b.adapter.Uploads.Dir, e.Name()))
		require.Empty(t, files, "nothing kept of a refused file")
	}
	res = b.upload(t, "client-0001", "empty.txt", "text/plain", nil)
	require.Equal(t, http.StatusBadRequest, res.Status)

	mine := b.upload(t, "client-0001", "a.txt", "text/plain", []byte("mine"))
	require.Equal(t, http.StatusCreated, mine.Status)
	res = b.postJSON(t, map[string]any{"client_id": "client-0002", "text": "look", "files": []string{mine.Body["file_id"].(string)}})
	require.Equal(t, http.StatusBadRequest, res.Status)
	require.True(t, strings.HasPrefix(res.Body["error"].(string), "no uploaded file"), res.Body["error"])
	require.Empty(t, b.core.messages(), "nothing reached the core")

	b.adapter.Uploads.MaxBytes = 0
	res = b.upload(t, "client-0001", "a.txt", "text/plain", []byte("x"))
	require.Equal(t, http.StatusForbidden, res.Status)
}

// Past uploads.max_total_bytes, every client's files together, the page is
// told the chat takes no more files (507), nothing is kept, and an
// erasure makes room again.
func TestUploadsAreBoundInAll(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.adapter.Uploads.MaxTotalBytes = 300 // two files of 100 bytes and what is known of them
	for _, client := range []string{"client-0001", "client-0002"} {
		res := b.upload(t, client, "a.txt", "text/plain", bytes.Repeat([]byte("a"), 100))
		require.Equal(t, http.StatusCreated, res.Status, res.Body)
	}
	res := b.upload(t, "client-0003", "b.txt", "text/plain", bytes.Repeat([]byte("b"), 100))
	require.Equal(t, http.StatusInsufficientStorage, res.Status)
	require.Equal(t, "The chat cannot take more files right now: send your message without it.", res.Body["error"])
	_, err := os.Stat(filepath.Join(b.adapter.Uploads.Dir, "client-0003"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing kept")

	require.NoError(t, b.adapter.EraseThread(context.Background(), "client-0001"))
	res = b.upload(t, "client-0003", "b.txt", "text/plain", bytes.Repeat([]byte("b"), 100))
	require.Equal(t, http.StatusCreated, res.Status, "room again")
}
