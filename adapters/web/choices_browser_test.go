package web_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/browsertest"
)

// tapCore is a pageCore that answers taps: the first makes the choice,
// the later ones are told the question was answered.
type tapCore struct {
	*pageCore
	mu   sync.Mutex
	taps []core.InboundMessage
}

func (c *tapCore) HandleTap(_ context.Context, msg core.InboundMessage) (core.TapAnswer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.taps = append(c.taps, msg)
	if len(c.taps) > 1 {
		return core.TapAnswer{Notice: core.NoticeAlreadyAnswered}, nil
	}
	return core.TapAnswer{Chosen: "Coffee"}, nil
}

// In a browser: a question from the history shows a button per choice;
// tapping one posts its data, marks the choice, disables the buttons and
// shows the user's answer as their message. A screenshot is kept.
func TestWebChatChoicesInABrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web chat's buttons")
	at := time.Now().UTC().Add(-time.Minute)
	pc := &tapCore{pageCore: &pageCore{history: []core.Message{
		{ID: 1, Seq: 1, Role: core.RoleUser, Source: core.SourceUser, Content: "make me a drink", CreatedAt: at},
		{ID: 2, Seq: 2, Role: core.RoleAssistant, Source: core.SourceReply, Content: "Tea or coffee?", CreatedAt: at.Add(time.Second),
			Metadata: map[string]any{core.ChoicesKey: []string{"Tea", "Coffee"}}},
	}}}
	_, srv := servePage(t, pc)

	bctx := browsertest.Start(t, browser, 800, 700, browserTimeout)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(".msg.assistant .choices button")),
	))
	eval := evaluator(t, bctx)
	require.Equal(t, []any{"Tea", "Coffee"}, eval(`[...document.querySelectorAll(".choices button")].map(b => b.textContent)`))
	// Clicked in the page, not through a node id: the page may draw the
	// message again (its history, then the event stream) between finding
	// the button and clicking it.
	eval(`document.querySelector(".choices button:nth-of-type(2)").click(), true`)
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(".choices button.chosen"))))
	require.Equal(t, "✓ Coffee", eval(`document.querySelector(".choices button.chosen").textContent`))
	require.Equal(t, true, eval(`[...document.querySelectorAll(".choices button")].every(b => b.disabled)`), "answered: no more taps")
	require.Equal(t, "Coffee", eval(`[...document.querySelectorAll(".msg.user")].pop().textContent`), "the answer shows as the user's message")
	pc.mu.Lock()
	require.Len(t, pc.taps, 1)
	require.Equal(t, core.ChoiceData(2, 1), pc.taps[0].Tap.Data)
	pc.mu.Unlock()

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")))
	shot := filepath.Join(browsertest.ArtifactDir(t), "web-chat-choices.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the web chat with a question answered: %s", shot)
}
