package app

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

	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run: a user of the web chat sends a photo; the model
// sees it, as it sees a Telegram photo, and answers. /erase then takes
// the file off the disk with the conversation.
func TestWebChatPhotoReachesTheModelAndGoesWithErase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := filepath.Join(b.dir, "uploads")
	r := b.start(t, b.writeConfig(t, "adapters:\n  web:\n    uploads: {dir: \""+dir+"\"}\n"))
	const client = "client-upload-1"
	events := openEvents(t, r.addr, client)

	req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/web/uploads?client_id="+client, bytes.NewReader(breadPNG(t)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("X-File-Name", url.PathEscape("bread.png"))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var up struct {
		FileID string `json:"file_id"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&up))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)

	b.model.Enqueue(llmtest.Text("That crumb looks perfect!"))
	body, _ := json.Marshal(map[string]any{"client_id": client, "name": "Ada", "text": "my first loaf", "files": []string{up.FileID}})
	resp, err = http.Post("http://"+r.addr+"/web/messages", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, "That crumb looks perfect!", events.nextMessage(t))
	req0 := b.model.Requests()[0]
	require.Len(t, req0.ImageURLs(), 1, "the model sees the photo")
	require.Contains(t, req0.LastUserMessage(), "my first loaf")
	entries, err := os.ReadDir(filepath.Join(dir, client))
	require.NoError(t, err)
	require.Len(t, entries, 2, "the file and what is known of it")

	postMessage(t, r.addr, client, "/erase confirm")
	events.nextMessage(t) // the notice that it is done
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, client))
		return os.IsNotExist(err)
	}, waitFor, 10*time.Millisecond, "the uploads go with the conversation")
}

// parley chat: "/file PATH text" sends the file with the text; the model
// sees the photo. A path that is no file is said on the terminal, and
// nothing reaches the model.
func TestTerminalSendsAFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	photo := filepath.Join(b.dir, "my loaf.png")
	require.NoError(t, os.WriteFile(photo, breadPNG(t), 0o600))
	b.model.Enqueue(llmtest.Text("Golden crust!"))
	cfg := b.writeConfig(t, "adapters:\n  terminal:\n    user: ada\n")
	in := "/file " + filepath.Join(b.dir, "missing.png") + " hi\n/file \"" + photo + "\" my first loaf\n"
	code, out, errOut := b.chatWith(cfg, in)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "(cannot send "+filepath.Join(b.dir, "missing.png")+": ")
	require.Contains(t, out, "Subaru: Golden crust!")
	reqs := b.model.Requests()
	require.Len(t, reqs, 1, "the missing file never reached the model")
	require.Len(t, reqs[0].ImageURLs(), 1)
	require.Contains(t, reqs[0].LastUserMessage(), "my first loaf")
}

// chatWith runs parley chat with in typed on the terminal.
func (b *testBundle) chatWith(cfg, in string) (int, string, string) {
	var out, errOut coretest.Logs
	code := Run(context.Background(), []string{"chat", "-c", cfg}, IO{In: strings.NewReader(in), Out: &out, Err: &errOut}, b.lookup)
	return code, out.String(), errOut.String()
}
