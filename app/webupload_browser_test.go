package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/browsertest"
)

// In headless Chromium: the user picks a photo with 📎, sees it waiting
// above the box, sends it with a line; the photo shows in their bubble,
// the model saw it, and the reply comes. After a reload the history
// still shows the photo. A screenshot is kept.
func TestWebChatSendsAPhotoInABrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web chat's files")
	b := setup(t)
	photo := filepath.Join(b.dir, "bread.png")
	require.NoError(t, os.WriteFile(photo, breadPNG(t), 0o600))
	r := b.start(t, b.writeConfig(t, "runs: {debounce: 0s}\nadapters:\n  web:\n    uploads: {dir: \""+filepath.Join(b.dir, "uploads")+"\"}\n"))
	b.model.Enqueue(llmtest.Text("That crumb looks perfect!"))

	bctx := browsertest.Start(t, browser, 900, 1000, browserTimeout)
	eval := func(js string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](js))
		require.NoError(t, err, js)
		return v
	}
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("http://"+r.addr+"/"), chromedp.WaitVisible(chromedp.ID("text"))))
	require.NoError(t, chromedp.Do(bctx, chromedp.SetUploadFiles(chromedp.ID("file"), []string{photo})))
	require.Eventually(t, func() bool { return eval(`document.getElementById("picked").innerText`) != "" }, waitFor, 20*time.Millisecond)
	require.Contains(t, eval(`document.getElementById("picked").innerText`), "bread.png", "the file waits above the box")
	require.NoError(t, chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("text"), "my first loaf\n")))
	// The reply may still be growing on the page (streaming): wait for
	// its last words.
	reply := `(() => { const m = document.querySelectorAll(".msg.assistant"); return m.length === 1 ? m[0].innerText.trim() : String(m.length); })()`
	require.Eventually(t, func() bool { return eval(reply) == "That crumb looks perfect!" }, waitFor, 20*time.Millisecond,
		"the reply never showed whole, and alone")
	loaded := `(() => { const i = document.querySelector(".msg.user img"); return !!(i && i.complete && i.naturalWidth === 160); })()`
	require.Eventually(t, func() bool { return eval(loaded) == true }, waitFor, 20*time.Millisecond, "the photo shows in the user's bubble")
	require.Equal(t, "", eval(`document.getElementById("picked").innerText`), "nothing left waiting")
	require.Len(t, b.model.Requests()[0].ImageURLs(), 1, "the model saw the photo")

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(browsertest.ArtifactDir(t), "web-chat-photo.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of a photo sent from the web chat: %s", shot)

	require.NoError(t, chromedp.Do(bctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("text"))))
	require.Eventually(t, func() bool { return eval(loaded) == true }, waitFor, 20*time.Millisecond, "the history shows the photo again")
}
