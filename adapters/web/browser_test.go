package web_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/internal/browsertest"
)

// browserTimeout bounds the whole browser session: a cold Chromium start
// on a loaded CI machine takes seconds.
const browserTimeout = 90 * time.Second

// evaluator runs JavaScript in the page of bctx and returns its value.
func evaluator(t *testing.T, bctx context.Context) func(js string) any {
	return func(js string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](js))
		require.NoError(t, err, js)
		return v
	}
}

// openLivePage opens the chat of srv in a browser of width×height, waits
// until its event stream is live and the history shows, and returns the
// page, its evaluator and the page's client id.
func openLivePage(t *testing.T, browser string, srv *httptest.Server, width, height int) (context.Context, func(string) any, string) {
	t.Helper()
	bctx := browsertest.Start(t, browser, width, height, browserTimeout)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#status.live")),
		chromedp.WaitVisible(chromedp.CSS(".msg.user"))))
	eval := evaluator(t, bctx)
	return bctx, eval, eval(`localStorage.getItem("parley.client_id")`).(string)
}

// servePage starts a web chat for the bot "Subaru" with host behind it,
// served on a test server, both stopped at the test's end.
func servePage(t *testing.T, host core.Host) (*web.Adapter, *httptest.Server) {
	t.Helper()
	a := web.New()
	require.NoError(t, a.Provision(context.Background(), core.Env{BotName: "Subaru"}))
	require.NoError(t, a.Validate())
	require.NoError(t, a.Start(context.Background(), host))
	mux := http.NewServeMux()
	a.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx))
		srv.Close()
	})
	return a, srv
}

// pageCore is the core behind the page in the browser test: a canned
// history and a model health the test changes.
type pageCore struct {
	core.InboundOnly // no commands; history and health are its own
	mu               sync.Mutex
	history          []core.Message
	health           llm.Health
	got              []string
}

func (c *pageCore) HandleInbound(_ context.Context, msg core.InboundMessage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, msg.Text)
	return nil
}

func (c *pageCore) received() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func (c *pageCore) History(context.Context, core.Platform, string, int) ([]core.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.history, nil
}

func (c *pageCore) ModelHealth() llm.Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.health
}

func (c *pageCore) setHealth(h llm.Health) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.health = h
}

// markdownReply is a reply as a model writes one: bold, a numbered list, a
// code block with a line too long for the bubble, a link, a quote, a
// table.
const markdownReply = "Here's how to **run the tests**:\n\n" +
	"1. Install Go 1.24 or newer.\n" +
	"2. Run the whole suite with the race detector:\n\n" +
	"```sh\ngo test -race -count=1 ./... # this line is long on purpose, so that the code block has to scroll sideways\n```\n\n" +
	"- Read the [testing guide](https://go.dev/doc/tutorial/add-a-test) first.\n" +
	"- Run `go vet ./...` too.\n\n" +
	"> Tip: a test should wait on a condition, *never* on a sleep.\n\n" +
	"| command | what |\n|---|---|\n| `go test` | runs tests |\n| `go vet` | finds bugs |"

// TestWebChatInABrowser loads the chat page in headless Chromium with a
// Markdown reply in the history, one pushed live, and a model that is
// failing: the replies show formatted (no Markdown markers, lists, code
// that scrolls, a visible link), the banner says replies may fail, and it
// goes away once the model answers again. A screenshot is kept.
func TestWebChatInABrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web chat")
	at := time.Now().UTC().Add(-time.Minute)
	pc := &pageCore{
		history: []core.Message{
			{ID: 1, Seq: 1, Role: core.RoleUser, Source: core.SourceUser, Content: "How do I run the tests? **asking** literally", CreatedAt: at},
			{ID: 2, Seq: 2, Role: core.RoleAssistant, Source: core.SourceReply, Content: markdownReply, CreatedAt: at.Add(time.Second)},
		},
		health: llm.Health{State: llm.HealthUnreachable, Err: "dial tcp: connection refused", Since: at},
	}
	a := web.New()
	a.Title = "Parley"
	// One message a minute, so the test sees the page tell a refusal.
	a.Limits.MessagesPerMinutePerClient = 1
	require.NoError(t, a.Provision(context.Background(), core.Env{BotName: "Subaru"}))
	require.NoError(t, a.Validate())
	require.NoError(t, a.Start(context.Background(), pc))
	mux := http.NewServeMux()
	a.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx)) // ends the page's event stream
		srv.Close()
	})

	bctx := browsertest.Start(t, browser, 1000, 1200, browserTimeout)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS(".msg.assistant.rich strong")),
		chromedp.WaitVisible(chromedp.ID("banner")),
	))
	eval := evaluator(t, bctx)

	// The banner: one line, in words for users, announced politely; the
	// page is opened on the bot's machine, so the owner also reads why.
	require.Equal(t, "The bot can't reach its model right now — replies may fail.", eval(`document.getElementById("banner").firstChild.textContent`))
	require.Equal(t, "On this machine: dial tcp: connection refused", eval(`document.querySelector("#banner .detail").textContent`))
	require.Equal(t, "status", eval(`document.getElementById("banner").getAttribute("role")`))

	// The reply from the history, formatted.
	reply := `document.querySelector(".msg.assistant.rich")`
	require.Equal(t, "run the tests", eval(reply+`.querySelector("strong").textContent`))
	require.Equal(t, float64(2), eval(reply+`.querySelectorAll("ol > li").length`))
	require.Equal(t, float64(2), eval(reply+`.querySelectorAll("ul > li").length`))
	require.Equal(t, "sh", eval(`(`+reply+`.querySelector("pre code").className.match(/language-(\w+)/) || [])[1]`))
	require.Equal(t, "https://go.dev/doc/tutorial/add-a-test", eval(reply+`.querySelector("a").getAttribute("href")`))
	require.Equal(t, float64(3), eval(reply+`.querySelectorAll("tr").length`))
	text := eval(reply + `.innerText`).(string)
	for _, marker := range []string{"**", "```", "](", "| ---"} {
		require.NotContains(t, text, marker, "no Markdown marker shows")
	}
	// The user's text is text: their asterisks stay.
	require.Equal(t, "How do I run the tests? **asking** literally", eval(`document.querySelector(".msg.user").textContent`))
	// White space collapses between the HTML's blocks (no doubled lines),
	// code keeps its own and scrolls inside the bubble rather than
	// widening it.
	require.Equal(t, "normal", eval(`getComputedStyle(`+reply+`).whiteSpace`))
	require.Equal(t, "pre", eval(`getComputedStyle(`+reply+`.querySelector("pre")).whiteSpace`))
	require.Equal(t, true, eval(`(() => { const p = `+reply+`.querySelector("pre"); return p.scrollWidth > p.clientWidth; })()`),
		"the long code line scrolls")
	require.Equal(t, true, eval(`(() => { const b = `+reply+`.getBoundingClientRect(), l = document.getElementById("log").getBoundingClientRect();
		return b.width <= l.width * 0.8 + 1; })()`), "the bubble keeps its width")
	require.Equal(t, true, eval(`(() => { const p = `+reply+`.querySelector("p"); return p.getBoundingClientRect().height < 40; })()`),
		"a one-line paragraph is one line high")
	// Links stand out from the bubble's text.
	require.NotEqual(t, eval(`getComputedStyle(`+reply+`).color`), eval(`getComputedStyle(`+reply+`.querySelector("a")).color`))

	// A reply pushed live is rendered the same way.
	clientID := eval(`localStorage.getItem("parley.client_id")`).(string)
	_, err := a.Send(context.Background(), core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText,
		Text: "Live: *fixed* — see `make test`."})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(".msg.assistant.rich:nth-of-type(3) em"))))
	require.Equal(t, "Live: fixed — see make test.", eval(`document.querySelectorAll(".msg.assistant.rich")[1].textContent.trim()`))

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG screenshot")
	shot := filepath.Join(browsertest.ArtifactDir(t), "web-chat-markdown.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the web chat with a Markdown reply and the banner: %s", shot)

	// On a phone the banner wraps rather than hiding its end, and the code
	// still scrolls inside its bubble.
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))))
	require.Equal(t, true, eval(`(() => { const b = document.getElementById("banner"); return b.scrollWidth <= b.clientWidth; })()`),
		"the whole banner text shows")
	require.Equal(t, true, eval(`(() => { const b = `+reply+`.getBoundingClientRect(); return b.right <= window.innerWidth; })()`),
		"the bubble fits the screen")
	png, err = chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot = filepath.Join(browsertest.ArtifactDir(t), "web-chat-markdown-phone.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the web chat on a phone: %s", shot)

	// The model answers again: the next reply's status check hides the
	// banner.
	pc.setHealth(llm.Health{State: llm.HealthOK, Since: time.Now()})
	_, err = a.Send(context.Background(), core.OutboundMessage{ChannelThreadID: clientID, Format: core.FormatRichText, Text: "Back **online**."})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitNotVisible(chromedp.ID("banner"))))
	require.Equal(t, true, eval(`document.getElementById("banner").hidden`))

	// The user writes: the page posts JSON from its own origin, which the
	// web chat takes; a second message within the minute is refused, and
	// the page says why in words.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.ID("text"), "Thanks, that helped!"),
		chromedp.Click(chromedp.ID("send")),
	))
	require.Eventually(t, func() bool { return len(pc.received()) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, []string{"Thanks, that helped!"}, pc.received())
	require.NoError(t, chromedp.Do(bctx,
		chromedp.WaitNotPresent(chromedp.CSS(".msg.user.pending")),
		chromedp.SendKeys(chromedp.ID("text"), "One more thing"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS(".note.bad")),
	))
	require.Regexp(t, `^Not delivered: You are sending messages too fast: wait [1-6]?[0-9] seconds and try again\.$`,
		eval(`document.querySelector(".note.bad").textContent`))
	require.Equal(t, true, eval(`document.querySelectorAll(".msg.user.failed").length === 1`))
	require.Equal(t, []string{"Thanks, that helped!"}, pc.received(), "the refused message did not reach the core")
}

// openShortLivedPage serves the web chat with streams that end after a
// second and opens it in a browser, live. It returns the core the page
// talks to, the adapter, a count of the event streams opened, the
// browser and the page's client id.
func openShortLivedPage(t *testing.T) (*pageCore, *web.Adapter, *atomic.Int32, context.Context, string) {
	t.Helper()
	browser := browsertest.Find(t, "the web chat")
	pc := &pageCore{}
	a := web.New()
	a.Limits.StreamLifetime = time.Second
	require.NoError(t, a.Provision(context.Background(), core.Env{BotName: "Subaru"}))
	require.NoError(t, a.Validate())
	require.NoError(t, a.Start(context.Background(), pc))
	mux := http.NewServeMux()
	a.Mount(mux)
	var streams atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/web/events" {
			streams.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.Stop(ctx))
		srv.Close()
	})

	bctx := browsertest.Start(t, browser, 800, 600, browserTimeout)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#status.live"))))
	clientID, err := chromedp.Run(bctx, chromedp.Evaluate[string](`localStorage.getItem("parley.client_id")`))
	require.NoError(t, err)
	return pc, a, &streams, bctx, clientID
}

// The page outlives its streams (issue 30: streams now end after
// adapters.web.limits.stream_lifetime): when the server ends one, the
// page reconnects by itself and reloads its history, so a reply stored
// while it was away shows, and one pushed after the reconnect arrives.
func TestWebChatPageReconnectsAfterTheStreamsLifetime(t *testing.T) {
	t.Parallel()
	pc, a, streams, bctx, clientID := openShortLivedPage(t)

	// A reply stored while the page is between streams: it is never
	// pushed, only in the history.
	pc.mu.Lock()
	pc.history = []core.Message{{ID: 7, Seq: 1, Role: core.RoleAssistant, Source: core.SourceReply,
		Content: "Sent while you were away.", CreatedAt: time.Now().UTC()}}
	pc.mu.Unlock()
	require.Eventually(t, func() bool { return streams.Load() >= 3 }, 20*time.Second, 20*time.Millisecond,
		"the page reconnected after each stream's end: %d streams", streams.Load())
	require.NoError(t, chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(".msg.assistant"))))
	got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector(".msg.assistant").textContent`))
	require.NoError(t, err)
	require.Equal(t, "Sent while you were away.", strings.TrimSpace(got))

	// Live again: a reply pushed now arrives (sent until a stream takes
	// it, since one may be between reconnects).
	require.Eventually(t, func() bool {
		if _, err := a.Send(context.Background(), core.OutboundMessage{ChannelThreadID: clientID, Text: "And now live."}); err != nil {
			return false
		}
		n, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`document.querySelectorAll(".msg.assistant").length`))
		return err == nil && n >= 2
	}, 20*time.Second, 300*time.Millisecond)
}
