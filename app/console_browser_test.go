package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/browsertest"
	"github.com/parleybot/parley/plugins/mood"
)

// browserTimeout bounds the whole browser session: a cold Chromium start
// on a loaded CI machine takes seconds.
const browserTimeout = 90 * time.Second

// TestConsoleInABrowser drives the web console of a running bot in
// headless Chromium: log in through the form, open a conversation, see its
// transcript and scheduled message, cancel the message. The job must be
// cancelled in the database and shown so. A screenshot is kept.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web console")
	b := setup(t)
	path := b.writeConfig(t, "bot:\n  timezone: Europe/Berlin\n")
	cfg, err := config.Load(path, b.lookup)
	require.NoError(t, err)
	ctx := context.Background()
	logs := &coretest.Logs{}
	a, err := buildApp(ctx, cfg, logs.Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
		serveHTTP:   true,
	})
	require.NoError(t, err)
	started := false
	t.Cleanup(func() {
		if started {
			require.NoError(t, a.stop())
		} else {
			a.close()
		}
		if t.Failed() {
			t.Logf("the bot's log:\n%s", logs)
		}
	})

	// A conversation with a reply, a silent turn, user text that looks like
	// markup, and a message the bot promised to send in an hour.
	now := time.Now().UTC()
	in, err := a.store.RecordInbound(ctx, core.InboundRecord{Platform: web.Platform, ChannelThreadID: "browser-1",
		ChannelUserID: "browser-1", DisplayName: "Ada", TimeZone: "Europe/Berlin",
		Text: "remind me to check the bread in an hour", Now: now.Add(-time.Minute)})
	require.NoError(t, err)
	conv := in.Conversation
	for i, m := range []core.Message{
		{Role: core.RoleAssistant, Source: core.SourceReply, Content: "I will remind you in an hour."},
		{Role: core.RoleUser, Source: core.SourceUser, Content: `thanks <b>so</b> much <script>window.pwned = 1</script>`},
		{Role: core.RoleAssistant, Source: core.SourceReply, Metadata: map[string]any{"silent": true}},
	} {
		m.ConversationID, m.CreatedAt = conv.ID, now.Add(time.Duration(i-30)*time.Second)
		require.NoError(t, a.store.AppendMessage(ctx, &m))
	}
	job := core.Job{ConversationID: conv.ID, Text: "Time to check on the bread!", DueAt: now.Add(time.Hour),
		Origin: "tool", CreatedByToolCallID: "call-bread"}
	_, err = a.store.ScheduleMessage(ctx, &job, false, 50)
	require.NoError(t, err)
	for i, v := range []float64{0.2, 0.5, 0.1} {
		require.NoError(t, mood.NewPoints(a.store.Database()).Add(ctx, &core.MoodPoint{ConversationID: conv.ID, Valence: v, Arousal: v - 0.3,
			Source: "set_mood", CreatedAt: now.Add(time.Duration(i-3) * time.Minute)}))
	}

	require.NoError(t, a.start(ctx))
	started = true
	base := "http://" + a.http.Addr()

	bctx := browsertest.Start(t, browser, 1280, 1600, browserTimeout)
	jobRow := chromedp.ID(fmt.Sprintf("job-%d", job.ID))

	// Any console page asks for the token first.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/console/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), b.env["PARLEY_API_TOKEN"]),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("conversations")),
	))
	list, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("conversations")))
	require.NoError(t, err)
	require.Contains(t, list, "Ada")
	require.Contains(t, list, "web")

	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#conversations a[href="/console/conversations/%d"]`, conv.ID))),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	))
	transcript, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("transcript")))
	require.NoError(t, err)
	require.Contains(t, transcript, "remind me to check the bread in an hour")
	require.Contains(t, transcript, "I will remind you in an hour.")
	require.Contains(t, transcript, "silent turn: nothing was sent")
	require.Contains(t, transcript, "<script>window.pwned = 1</script>", "user text shows as text")
	pwned, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.pwned === 1`))
	require.NoError(t, err)
	require.False(t, pwned, "user text never runs")
	zone, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("zone")))
	require.NoError(t, err)
	require.Contains(t, zone, "Europe/Berlin")

	row, err := chromedp.Run(bctx, chromedp.Text(jobRow))
	require.NoError(t, err)
	require.Contains(t, row, "pending")
	require.Contains(t, row, "Time to check on the bread!")
	require.Contains(t, row, job.DueAt.In(mustZone(t, "Europe/Berlin")).Format("2006-01-02 15:04:05 MST"))

	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.ID(fmt.Sprintf("cancel-%d", job.ID))),
		chromedp.WaitVisible(chromedp.ID("notice")),
	))
	notice, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("notice")))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("Job %d cancelled.", job.ID), strings.TrimSpace(notice))
	status, err := chromedp.Run(bctx, chromedp.AttributeValue(jobRow, "data-status"))
	require.NoError(t, err)
	require.Equal(t, "cancelled", status.Value)
	row, err = chromedp.Run(bctx, chromedp.Text(jobRow))
	require.NoError(t, err)
	require.Contains(t, row, "cancelled by console")

	stored, err := a.store.Job(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, stored.Status)
	require.Equal(t, "console", stored.CancelledByToolCallID)

	// A real turn of a reasoning model: its reply shows as rendered
	// Markdown, its reasoning only in the run record, collapsed.
	b.model.Enqueue(llmtest.Text("<think>They want a plan; keep it short.</think>Here is the **plan**:\n\n1. feed the starter\n2. bake"))
	postMessage(t, a.http.Addr(), "browser-2", "what's the plan?")
	b.waitStored(t, web.Platform, "browser-2", 2)
	other, err := a.store.ConversationByThread(ctx, web.Platform, "browser-2")
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(fmt.Sprintf("%s/console/conversations/%d", base, other.ID)),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	))
	bold, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#transcript .rich strong")))
	require.NoError(t, err)
	require.Equal(t, "plan", bold, "the reply's Markdown is rendered")
	items, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#transcript .rich li").length`))
	require.NoError(t, err)
	require.Equal(t, 2, items)
	shownText, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("transcript").innerText`))
	require.NoError(t, err)
	require.NotContains(t, shownText, "keep it short", "the reasoning is collapsed")
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS("#transcript details.run > summary")),
		chromedp.Click(chromedp.CSS("#transcript details.reasoning > summary")),
		chromedp.WaitVisible(chromedp.CSS("#transcript details.reasoning pre")),
	))
	reasoning, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#transcript details.reasoning pre")))
	require.NoError(t, err)
	require.Equal(t, "They want a plan; keep it short.", strings.TrimSpace(reasoning))
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(browsertest.ArtifactDir(t), "console-reasoning.png"), png, 0o644))
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(fmt.Sprintf("%s/console/conversations/%d", base, conv.ID)),
		chromedp.WaitVisible(chromedp.ID("transcript"))))

	png, err = chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG screenshot")
	shot := filepath.Join(browsertest.ArtifactDir(t), "console-cancel.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of the console after the cancel: %s", shot)
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(t, err)
	return loc
}
