package web_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/browsertest"
)

// In a browser: a reply with a picture, a voice note and a document shows
// the picture drawn, an audio player and a download link. A screenshot is
// kept.
func TestWebChatShowsFilesInABrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web chat's files")
	at := time.Now().UTC().Add(-time.Minute)
	pc := &pageCore{history: []core.Message{
		{ID: 1, Seq: 1, Role: core.RoleUser, Source: core.SourceUser, Content: "show me Miso", CreatedAt: at},
	}}
	a, srv := servePage(t, pc)

	bctx, eval, clientID := openLivePage(t, browser, srv, 800, 700)

	var pic bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 240, 160))
	for y := range 160 {
		for x := range 240 {
			img.Set(x, y, color.RGBA{R: uint8(x), G: 120, B: uint8(y), A: 255})
		}
	}
	require.NoError(t, png.Encode(&pic, img))
	_, err := a.SendFiles(context.Background(), core.OutboundMessage{ChannelThreadID: clientID, Text: "Here is Miso, and a note.",
		Files: []core.OutboundFile{
			{Kind: core.AttachImage, Name: "miso.png", MIME: "image/png", Data: pic.Bytes()},
			{Kind: core.AttachVoice, Name: "reply.ogg", MIME: "audio/ogg", Data: []byte("OggS not really")},
			{Kind: core.AttachDocument, Name: "notes.txt", MIME: "text/plain", Data: []byte("water the plants")},
		}})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(".msg.assistant .files img"))))
	require.Eventually(t, func() bool {
		return eval(`(() => { const i = document.querySelector(".files img"); return i.complete && i.naturalWidth; })()`) == float64(240)
	}, 10*time.Second, 20*time.Millisecond, "the picture was drawn from its URL")
	require.Equal(t, true, eval(`!!document.querySelector(".files audio[controls]")`))
	require.Equal(t, "⬇ notes.txt (16 bytes)", eval(`document.querySelector(".files a").textContent`))
	require.Equal(t, "notes.txt", eval(`document.querySelector(".files a").getAttribute("download")`))

	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(browsertest.ArtifactDir(t), "web-chat-files.png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot of the web chat with a reply's files: %s", path)
}
