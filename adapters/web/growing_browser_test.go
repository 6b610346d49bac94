package web_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/browsertest"
)

// growingReply is a reply as the core streams it: the whole visible text
// at each update, an unclosed Markdown marker closed (the core's job), so
// that it renders while partial.
var growingReply = []string{
	"Sure — **here**",
	"Sure — **here is the plan**:\n\n1. Install",
	"Sure — **here is the plan**:\n\n1. Install Go 1.24.\n2. Run `go test`",
	"Sure — **here is the plan**:\n\n1. Install Go 1.24.\n2. Run `go test -race ./...`.\n\n> Tip: wait on",
}

const grownReply = "Sure — **here is the plan**:\n\n1. Install Go 1.24.\n2. Run `go test -race ./...`.\n\n> Tip: wait on a condition, *never* on a sleep."

// TestWebChatShowsAReplyGrowing loads the page in headless Chromium and
// streams a reply to it as the core does: the reply shows in one bubble
// that grows, formatted at each step, and the finished message takes its
// place (one bubble, no caret). A reply taken back (Abandon) disappears.
// Screenshots mid-stream and finished are kept.
func TestWebChatShowsAReplyGrowing(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web chat")
	at := time.Now().UTC().Add(-time.Minute)
	pc := &pageCore{history: []core.Message{
		{ID: 1, Seq: 1, Role: core.RoleUser, Source: core.SourceUser, Content: "How do I run the tests?", CreatedAt: at},
	}}
	a, srv := servePage(t, pc)

	bctx, eval, clientID := openLivePage(t, browser, srv, 900, 700)
	bubbles := `document.querySelectorAll(".msg.assistant").length`
	shown := `(document.querySelector(".msg.assistant") || {}).innerText`

	ctx := context.Background()
	reply, err := a.Stream(ctx, core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText})
	require.NoError(t, err)
	want := []string{"Sure — here", "Sure — here is the plan:\nInstall", "Run go test", "Tip: wait on"}
	for i, text := range growingReply {
		require.NoError(t, reply.Update(ctx, text))
		require.Eventually(t, func() bool {
			s, err := chromedp.Run(bctx, chromedp.Evaluate[string](shown))
			return err == nil && containsText(s, want[i])
		}, 10*time.Second, 20*time.Millisecond, "step %d: the bubble shows %q", i, eval(shown))
		require.Equal(t, float64(1), eval(bubbles), "one bubble grows")
		require.Equal(t, true, eval(`document.querySelector(".msg.assistant").classList.contains("partial")`))
		require.NotContains(t, eval(shown), "**", "no Markdown marker shows while it grows")
	}
	require.Equal(t, "here is the plan", eval(`document.querySelector(".msg.assistant.partial strong").textContent`))
	require.Equal(t, float64(2), eval(`document.querySelectorAll(".msg.assistant.partial ol > li").length`))
	require.Equal(t, "", eval(`document.getElementById("typing").textContent`), "the growing bubble stands for typing")
	require.Equal(t, "P", eval(`document.querySelector(".msg.assistant .caret").tagName`), "the caret follows the last words, in the quote")
	screenshot(t, bctx, "web-chat-reply-growing.png")

	_, err = reply.Finish(ctx, core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText, Text: grownReply})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(".msg.partial"))))
	require.Equal(t, float64(1), eval(bubbles), "the finished reply took the growing one's place")
	require.Contains(t, eval(shown), "Tip: wait on a condition, never on a sleep.")
	require.Equal(t, "never", eval(`document.querySelector(".msg.assistant blockquote em").textContent`))
	require.Nil(t, eval(`document.querySelector(".msg.assistant").getAttribute("aria-busy")`))
	require.Nil(t, eval(`document.querySelector(".caret")`), "no caret once finished")
	screenshot(t, bctx, "web-chat-reply-finished.png")

	// A reply taken back: its bubble goes, the finished one stays.
	second, err := a.Stream(ctx, core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText})
	require.NoError(t, err)
	require.NoError(t, second.Update(ctx, "Let me also"))
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(".msg.assistant.partial"))))
	require.Equal(t, float64(2), eval(bubbles))
	require.NoError(t, second.Abandon(ctx))
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(".msg.assistant.partial"))))
	require.Equal(t, float64(1), eval(bubbles))
}

// containsText reports whether the page's text holds want, white space
// aside (innerText puts list numbers and line breaks of its own).
func containsText(got, want string) bool {
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	return strings.Contains(squash(got), squash(want))
}

func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(browsertest.ArtifactDir(t), name)
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot: %s", shot)
}

// A page whose event stream ends while a reply grows (here every second,
// adapters.web.limits.stream_lifetime) drops the partial when it
// reconnects, shows the reply again from its next partial, and ends with
// one bubble: the finished reply, live or from the history.
func TestWebChatReconnectingMidReply(t *testing.T) {
	t.Parallel()
	pc, a, streams, bctx, clientID := openShortLivedPage(t)
	shows := func(js string) float64 {
		n, err := chromedp.Run(bctx, chromedp.Evaluate[float64](js))
		require.NoError(t, err)
		return n
	}
	ctx := context.Background()
	reply, err := a.Stream(ctx, core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText})
	require.NoError(t, err)
	// grow sends text until the page shows it: it may be between streams.
	grow := func(text string) {
		t.Helper()
		require.Eventually(t, func() bool {
			if reply.Update(ctx, text) != nil {
				return false
			}
			got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(document.querySelector(".msg.partial") || {}).textContent || ""`))
			return err == nil && strings.TrimSpace(got) == text
		}, 20*time.Second, 100*time.Millisecond, "the page shows %q", text)
	}
	grow("One")
	before := streams.Load()
	require.Eventually(t, func() bool { return streams.Load() > before }, 20*time.Second, 20*time.Millisecond, "the page reconnected")
	grow("One two")
	require.Equal(t, float64(1), shows(`document.querySelectorAll(".msg.assistant").length`), "one bubble after the reconnect")

	res, err := reply.Finish(ctx, core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText, Text: "One two three."})
	require.NoError(t, err)
	// Stored as the core stores it, should the page be between streams.
	pc.mu.Lock()
	pc.history = []core.Message{{ID: 9, Seq: 1, Role: core.RoleAssistant, Source: core.SourceReply, Content: "One two three.",
		PlatformMessageID: res.PlatformMessageIDs[0], CreatedAt: time.Now().UTC()}}
	pc.mu.Unlock()
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitNotPresent(chromedp.CSS(".msg.partial"))))
	// Through a reconnect or two more: still one bubble, the finished one.
	before = streams.Load()
	require.Eventually(t, func() bool { return streams.Load() > before+1 }, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS("#status.live"))))
	require.Equal(t, float64(1), shows(`document.querySelectorAll(".msg.assistant").length`))
	got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector(".msg.assistant").textContent`))
	require.NoError(t, err)
	require.Equal(t, "One two three.", strings.TrimSpace(got))
}
