package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/browsertest"
)

// The console's pages, each driven in headless Chromium against `parley
// run` on a real SQLite file, with a screenshot kept of each.

// Window sizes: a desktop, and a phone (390 px, an iPhone's width).
const (
	desktopWidth, desktopHeight = 1280, 1000
	phoneWidth, phoneHeight     = 390, 844
)

// startBot runs `parley run` with the config at path, its log shown if
// the test fails.
func startBot(t *testing.T, b *testBundle, path string) *running {
	t.Helper()
	r := b.start(t, path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bot's log:\n%s", r.stderr)
		}
	})
	return r
}

// do runs browser steps, each wait bounded by waitFor rather than the
// whole session's deadline.
func do(t *testing.T, bctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bctx, waitFor)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, steps...))
}

// consoleLogin opens a browser of width×height on the console of the bot
// at addr, logs in through the form and waits for the overview.
func consoleLogin(t *testing.T, b *testBundle, addr string, width, height int) context.Context {
	t.Helper()
	browser := browsertest.Find(t, "the web console")
	bctx := browsertest.Start(t, browser, width, height, browserTimeout)
	do(t, bctx,
		// The window has a minimum width; the viewport is what a phone has.
		chromedp.EmulateViewport(int64(width), int64(height)),
		chromedp.Navigate("http://"+addr+"/console/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), b.env["PARLEY_API_TOKEN"]),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("health")),
	)
	return bctx
}

// screenshot keeps a full-page screenshot as name.png in the artifacts.
func screenshot(t *testing.T, bctx context.Context, name string) {
	t.Helper()
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(browsertest.ArtifactDir(t), name+".png")
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("screenshot: %s", path)
}

// text is the visible text of the element sel matches. A live update may
// replace the element between finding it and reading it ("No node with
// given id found"): then it is found again, until waitFor.
func text(t *testing.T, bctx context.Context, sel string) string {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		ctx, cancel := context.WithTimeout(bctx, waitFor)
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "No node with given id") || time.Now().After(deadline) {
			require.NoError(t, err, sel)
		}
	}
}

// waitText waits until the element sel matches shows want (the page may
// change under it: live updates replace sections).
func waitText(t *testing.T, bctx context.Context, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.innerText.includes(%q); })()`, sel, want)
	_, err := chromedp.Run(bctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(waitFor)))
	require.NoError(t, err, "waiting for %q in %s; it shows: %q", want, sel, textOrNone(bctx, sel))
}

func textOrNone(bctx context.Context, sel string) string {
	s, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {innerText: "(none)"}).innerText`, sel)))
	if err != nil {
		return err.Error()
	}
	return s
}

// submit clicks the button sel and waits for the page it leads to: a
// mark set on this page is gone from the next.
func submit(t *testing.T, bctx context.Context, sel string) {
	t.Helper()
	_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.beforeSubmit = true`))
	require.NoError(t, err)
	do(t, bctx, chromedp.Click(chromedp.CSS(sel)))
	// Evaluating while the browser navigates fails: try until the new
	// page answers.
	require.Eventually(t, func() bool {
		next, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`!window.beforeSubmit && document.readyState === "complete"`))
		return err == nil && next
	}, waitFor, 20*time.Millisecond, "the page after %s", sel)
}

// fitsTheWidth checks that the page does not scroll sideways: on a phone,
// wide tables scroll inside their own box, never the page.
func fitsTheWidth(t *testing.T, bctx context.Context) {
	t.Helper()
	over, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth - window.innerWidth`))
	require.NoError(t, err)
	require.LessOrEqual(t, over, 0, "the page is wider than the window")
}

// TestConsoleOverviewPage: the overview of a bot that has answered a DM,
// at desktop and phone width, updating live when a new message comes.
func TestConsoleOverviewPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := startBot(t, b, b.writeConfig(t, "console:\n  prices:\n    "+llmtest.DefaultModel+": {prompt: 0.15, completion: 0.6}\n"))
	b.model.Enqueue(llmtest.Text("Hello Ada!").WithUsage(1200, 30))
	postMessage(t, r.addr, "overview-ada", "hi, I'm Ada")
	b.waitStored(t, web.Platform, "overview-ada", 2)

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	require.Contains(t, text(t, bctx, "#health-status"), "All is well")
	for _, c := range []string{"store", "llm"} {
		state, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(fmt.Sprintf(`[id="component-%s"]`, c)), "data-state"))
		require.NoError(t, err, c)
		require.Equal(t, "ok", state.Value, c)
	}
	require.Contains(t, text(t, bctx, "#chart-hour figcaption"), "1 received · 1 sent · 1 turns")
	require.Contains(t, text(t, bctx, "#chart-day figcaption"), "1 received · 1 sent · 1 turns")
	tokens := text(t, bctx, "#token-table")
	require.Contains(t, tokens, llmtest.DefaultModel, "the model that answered")
	require.Contains(t, tokens, "1,200")
	require.Contains(t, text(t, bctx, "#cost-total"), "0.0002", "1,200 × 0.15 + 30 × 0.6 per million")
	require.Contains(t, text(t, bctx, "#recent"), "Hello Ada!")
	require.Contains(t, text(t, bctx, "#limits"), "No message was held by a per-user limit")
	waitText(t, bctx, "#live-status", "Live")

	// A new message comes while the page is open: it appears without a
	// reload (the marker set on this page survives).
	_, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.sameOverview = true`))
	require.NoError(t, err)
	b.model.Enqueue(llmtest.Text("Bread in the oven, noted."))
	postMessage(t, r.addr, "overview-bob", "the bread is in the oven")
	waitText(t, bctx, "#recent", "Bread in the oven, noted.")
	waitText(t, bctx, "#chart-hour figcaption", "2 received · 2 sent · 2 turns")
	same, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.sameOverview === true`))
	require.NoError(t, err)
	require.True(t, same, "updated in place, not reloaded")
	screenshot(t, bctx, "console-overview")

	phone := consoleLogin(t, b, r.addr, phoneWidth, phoneHeight)
	require.Contains(t, text(t, phone, "#recent"), "Bread in the oven, noted.")
	fitsTheWidth(t, phone)
	screenshot(t, phone, "console-overview-phone")
}

// TestConsoleJobsPage: jobs of several conversations on the timeline,
// filtered, and one cancelled from the page.
func TestConsoleJobsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := startBot(t, b, b.writeConfig(t, "bot:\n  timezone: Europe/Berlin\n"))
	st := b.openStoreFile(t)
	ctx := context.Background()
	now := time.Now().UTC()
	ada := recordConversation(t, st, "jobs-ada", "Ada", "America/New_York", "hello", now.Add(-time.Hour))
	bob := recordConversation(t, st, "jobs-bob", "Bob", "", "hi", now.Add(-2*time.Hour))
	soon := core.Job{ConversationID: ada.ID, Text: "Stretch your legs", DueAt: now.Add(2 * time.Hour), Origin: "tool"}
	_, err := st.ScheduleMessage(ctx, &soon, false, 50)
	require.NoError(t, err)
	later := core.Job{ConversationID: bob.ID, Text: "The dentist is on Friday", DueAt: now.Add(3 * 24 * time.Hour), Origin: "tool"}
	_, err = st.ScheduleMessage(ctx, &later, false, 50)
	require.NoError(t, err)
	checkIn := core.Job{ConversationID: ada.ID, Name: "evening check-in", Text: "Ask how the day went",
		Recurrence: "0 20 * * *", DueAt: now.Add(5 * time.Hour).Truncate(time.Hour), Origin: "tool"}
	require.NoError(t, st.CreateRecurringJob(ctx, &checkIn, 10))
	sentAt := now.Add(-30 * time.Minute)
	sent := core.Job{ConversationID: bob.ID, Kind: core.JobMessage, Status: core.JobSent, Text: "Good morning, Bob!",
		DueAt: sentAt, SentAt: &sentAt, Attempts: 1, UpdatedAt: sentAt, CreatedAt: sentAt.Add(-time.Hour)}
	require.NoError(t, st.CreateJob(ctx, &sent))
	failed := core.Job{ConversationID: ada.ID, Kind: core.JobMessage, Status: core.JobFailed, Text: "Your parcel is here",
		DueAt: now.Add(-10 * time.Minute), Attempts: 3, LastError: "web chat: the browser is gone",
		UpdatedAt: now.Add(-5 * time.Minute), CreatedAt: now.Add(-time.Hour)}
	require.NoError(t, st.CreateJob(ctx, &failed))

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	do(t, bctx,
		chromedp.Click(chromedp.CSS(`nav a[href="/console/jobs"]`)),
		chromedp.WaitVisible(chromedp.ID("due-day")),
	)
	day := text(t, bctx, "#due-day")
	require.Contains(t, day, "Stretch your legs")
	require.Contains(t, day, "Ask how the day went")
	require.Contains(t, day, soon.DueAt.In(mustZone(t, "America/New_York")).Format("Mon 2 Jan 15:04 MST")+" for the user",
		"Ada's own time under the owner's")
	require.NotContains(t, day, "The dentist is on Friday")
	require.Contains(t, text(t, bctx, "#due-week"), "The dentist is on Friday")
	recurring := text(t, bctx, "#recurring")
	require.Contains(t, recurring, "evening check-in")
	require.Contains(t, recurring, "0 20 * * *")
	require.Contains(t, recurring, "20:00 EST", "its next occurrences, in Ada's zone")
	recent := text(t, bctx, "#recent-jobs")
	require.Contains(t, recent, "Good morning, Bob!")
	require.Contains(t, recent, "web chat: the browser is gone")
	require.Contains(t, text(t, bctx, fmt.Sprintf("#job-%d", failed.ID)), "Retry")
	screenshot(t, bctx, "console-jobs")

	// Filter: the pending jobs on the web, by the form.
	do(t, bctx,
		chromedp.SetValue(chromedp.ID("filter-status"), "pending"),
		chromedp.SetValue(chromedp.ID("filter-platform"), "web"),
		chromedp.Click(chromedp.ID("apply-filter")),
		chromedp.WaitVisible(chromedp.ID("list-title")),
	)
	require.Contains(t, text(t, bctx, "#list-title"), "3 pending job(s) on web")
	list := text(t, bctx, "#job-list")
	require.Contains(t, list, "Stretch your legs")
	require.NotContains(t, list, "Good morning, Bob!")

	// Cancel one: back on the filtered list, it is gone from it.
	do(t, bctx,
		chromedp.Click(chromedp.ID(fmt.Sprintf("cancel-%d", soon.ID))),
		chromedp.WaitVisible(chromedp.ID("notice")),
	)
	require.Equal(t, fmt.Sprintf("Job %d cancelled.", soon.ID), strings.TrimSpace(text(t, bctx, "#notice")))
	require.Contains(t, text(t, bctx, "#list-title"), "2 pending job(s) on web")
	require.NotContains(t, text(t, bctx, "#job-list"), "Stretch your legs")
	j, err := st.Job(ctx, soon.ID)
	require.NoError(t, err)
	require.Equal(t, core.JobCancelled, j.Status)
	require.Equal(t, "console", j.CancelledByToolCallID)
	screenshot(t, bctx, "console-jobs-filtered")

	phone := consoleLogin(t, b, r.addr, phoneWidth, phoneHeight)
	do(t, phone, chromedp.Navigate("http://"+r.addr+"/console/jobs"), chromedp.WaitVisible(chromedp.ID("recent-jobs")))
	fitsTheWidth(t, phone)
	screenshot(t, phone, "console-jobs-phone")
}

// recordConversation stores a web conversation with one user message.
func recordConversation(t *testing.T, st interface {
	RecordInbound(context.Context, core.InboundRecord) (core.InboundResult, error)
}, thread, name, zone, text string, at time.Time) core.Conversation {
	t.Helper()
	in, err := st.RecordInbound(context.Background(), core.InboundRecord{Platform: web.Platform, ChannelThreadID: thread,
		ChannelUserID: thread, DisplayName: name, TimeZone: zone, Text: text, Now: at})
	require.NoError(t, err)
	return in.Conversation
}

// TestConsoleConversationsSearch: search by a name, a user id and a word
// of a message.
func TestConsoleConversationsSearch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := startBot(t, b, b.writeConfig(t, ""))
	st := b.openStoreFile(t)
	now := time.Now().UTC()
	recordConversation(t, st, "search-ada", "Ada Lovelace", "", "my sourdough starter is bubbling", now.Add(-3*time.Hour))
	recordConversation(t, st, "search-bob", "Bob", "", "remind me about the dentist", now.Add(-2*time.Hour))
	recordConversation(t, st, "search-eve", "Eve", "", "hello", now.Add(-time.Hour))

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	do(t, bctx,
		chromedp.Click(chromedp.CSS(`nav a[href="/console/conversations"]`)),
		chromedp.WaitVisible(chromedp.ID("q")),
	)
	all := text(t, bctx, "#conversations")
	require.Regexp(t, `(?s)Eve.*Bob.*Ada Lovelace`, all, "most recently active first")

	search := func(q string) string {
		t.Helper()
		do(t, bctx, chromedp.SetValue(chromedp.ID("q"), q))
		submit(t, bctx, "#search-button")
		do(t, bctx, chromedp.WaitVisible(chromedp.ID("clear-search")))
		return textOrNone(bctx, "#conversations")
	}
	found := search("sourdough")
	require.Contains(t, found, "Ada Lovelace", "by a word of a message")
	require.NotContains(t, found, "Bob")
	screenshot(t, bctx, "console-conversations-search")
	require.Contains(t, search("search-bob"), "Bob", "by user id")
	require.NotContains(t, search("lovelace"), "Eve", "by name")
	require.Equal(t, "(none)", search("nobody-at-all"))
	require.Contains(t, text(t, bctx, "#no-conversations"), "No conversation matches")
}

// breadPNG is a small picture, for the transcript's thumbnail.
func breadPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 160, 120))
	for y := range 120 {
		for x := range 160 {
			img.Set(x, y, color.RGBA{R: uint8(180 + x/4), G: uint8(120 + y/3), B: 60, A: 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return buf.Bytes()
}

// TestConsoleTranscriptPage: a Telegram user sends a photo; the model
// thinks, calls a tool and answers. The transcript shows the thumbnail,
// the reply's Markdown, and collapsed: the tool call with its arguments
// and result, the reasoning and the run record.
func TestConsoleTranscriptPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	r := startBot(t, b, b.writeConfig(t, telegramConfig(fake, "")+"bot:\n  timezone: Europe/Berlin\n"))
	sendAt := time.Now().Add(3 * time.Hour).UTC().Format(time.RFC3339)
	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call-bread", "schedule_private_message",
			fmt.Sprintf(`{"send_at":%q,"message_text":"Time to feed the starter!"}`, sendAt))).WithReasoning("A photo of bread: praise it, and set the reminder they asked for."),
		llmtest.Text("What a **crumb**! I will remind you to feed the starter.").WithUsage(900, 40),
	)
	fake.SendPhoto(ada, telegramtest.Media{Data: breadPNG(t), Caption: "my bread! remind me to feed the starter in 3 hours"})
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Contains(t, sent[0].Plain, "What a crumb!")
	b.waitStored(t, telegram.Platform, "4242", 2)
	conv, err := b.openStoreFile(t).ConversationByThread(context.Background(), telegram.Platform, "4242")
	require.NoError(t, err)

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	do(t, bctx,
		chromedp.Navigate(fmt.Sprintf("http://%s/console/conversations/%d", r.addr, conv.ID)),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	)
	transcript := text(t, bctx, "#transcript")
	require.Contains(t, transcript, "my bread! remind me to feed the starter in 3 hours")
	require.Contains(t, transcript, "image (")
	// The photo, fetched from Telegram through the adapter, is shown.
	loaded, err := chromedp.Run(bctx, chromedp.Poll[int](
		`(() => { const i = document.querySelector("#transcript img.thumb"); return i && i.complete && i.naturalWidth; })()`,
		chromedp.WithPollingTimeout(waitFor)))
	require.NoError(t, err)
	require.Equal(t, 160, loaded, "the thumbnail is the photo")
	bold, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("#transcript .rich strong")))
	require.NoError(t, err)
	require.Equal(t, "crumb", bold, "the reply's Markdown, rendered")

	// Collapsed until opened: nothing of the tool call, reasoning or
	// record is on screen.
	for _, hidden := range []string{"Time to feed the starter!", "praise it", "gpt", "900 prompt"} {
		require.NotContains(t, transcript, hidden)
	}
	require.Contains(t, transcript, "Tool call: schedule_private_message")
	do(t, bctx,
		chromedp.Click(chromedp.CSS("#transcript details.tool > summary")),
		chromedp.Click(chromedp.CSS("#transcript details.reasoning > summary")),
		chromedp.Click(chromedp.CSS("#transcript details.run > summary")),
		chromedp.WaitVisible(chromedp.CSS("#transcript details.run dl")),
	)
	args := text(t, bctx, "#transcript details.tool .tool-args")
	require.Contains(t, args, `"message_text": "Time to feed the starter!"`)
	require.Contains(t, text(t, bctx, "#transcript details.tool .tool-result"), "Time to feed the starter!")
	require.Contains(t, text(t, bctx, "#transcript details.reasoning"), "praise it, and set the reminder")
	record := text(t, bctx, "#transcript details.run")
	require.Contains(t, record, llmtest.DefaultModel, "the model the tokens went to")
	require.Contains(t, record, "user_turn · succeeded")
	require.Contains(t, record, "Duration")
	require.Contains(t, record, "1 · 1 tool call(s)")
	require.Contains(t, text(t, bctx, "#jobs"), "Time to feed the starter!", "the job the tool made")
	require.Contains(t, text(t, bctx, "#conv-tokens"), "completion")
	screenshot(t, bctx, "console-transcript")

	phone := consoleLogin(t, b, r.addr, phoneWidth, phoneHeight)
	do(t, phone,
		chromedp.Navigate(fmt.Sprintf("http://%s/console/conversations/%d", r.addr, conv.ID)),
		chromedp.WaitVisible(chromedp.ID("transcript")),
		chromedp.Click(chromedp.CSS("#transcript details.tool > summary")),
	)
	fitsTheWidth(t, phone)
	screenshot(t, phone, "console-transcript-phone")
}

// TestConsoleOwnersJourney: the bot's Telegram token is refused, so the
// adapter fails and a scheduled message fails with it. The owner logs in,
// sees the failing adapter on the overview, opens the failed job, fixes
// the cause, retries it from the console and sees it sent.
func TestConsoleOwnersJourney(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	// One attempt: a refused send fails the job at once.
	// A short long poll: the revoked token is seen within a second.
	r := startBot(t, b, b.writeConfig(t, telegramConfig(fake, "    poll_timeout: 1s")+"scheduler:\n  max_attempts: 1\n"))
	b.model.Enqueue(llmtest.Text("Hi Ada! I'm here."))
	fake.SendPrivate(ada, "hello")
	fake.WaitSent(t, ada.ID, 1, waitFor)
	b.waitStored(t, telegram.Platform, "4242", 2)
	conv, err := b.openStoreFile(t).ConversationByThread(context.Background(), telegram.Platform, "4242")
	require.NoError(t, err)

	// The token is revoked; the owner's system routes a reminder to Ada.
	fake.RevokeToken()
	const reminder = "Your parcel arrives at 18:00."
	jobID := routeMessage(t, b, r.addr, conv.ID, reminder)
	st := b.openStoreFile(t)
	require.Eventually(t, func() bool {
		j, err := st.Job(context.Background(), jobID)
		return err == nil && j.Status == core.JobFailed
	}, waitFor, 10*time.Millisecond, "the refused send failed the job")

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	const adapterRow = `[id="component-adapter:telegram"]`
	waitText(t, bctx, adapterRow, "401")
	state, err := chromedp.Run(bctx, chromedp.AttributeValue(chromedp.CSS(adapterRow), "data-state"))
	require.NoError(t, err)
	require.Equal(t, "failing", state.Value)
	require.Contains(t, text(t, bctx, "#health-status"), "Something is failing")
	waitText(t, bctx, "#failures", "unauthorized")
	screenshot(t, bctx, "console-journey-1-overview")

	// Open the failed job from the failures.
	do(t, bctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#failures a[href="/console/jobs/%d"]`, jobID))),
		chromedp.WaitVisible(chromedp.ID("job-error")),
	)
	require.Equal(t, "failed", text(t, bctx, "#job-status"))
	require.Contains(t, text(t, bctx, "#job-error"), "unauthorized (is the token revoked?)")
	require.Contains(t, text(t, bctx, "#job-text"), reminder)
	require.Contains(t, text(t, bctx, "#platform-down"), "401", "the page says the adapter is down")
	screenshot(t, bctx, "console-journey-2-failed-job")

	// The owner fixes the token and watches the overview: the adapter
	// recovers, live.
	fake.RestoreToken()
	do(t, bctx, chromedp.Click(chromedp.CSS(`nav a[href="/console/"]`)), chromedp.WaitVisible(chromedp.ID("health")))
	waitText(t, bctx, "#health-status", "All is well")
	waitText(t, bctx, adapterRow, "ok")

	// Then finds the job among the failed ones and retries it.
	do(t, bctx, chromedp.Click(chromedp.CSS(`nav a[href="/console/jobs"]`)), chromedp.WaitVisible(chromedp.ID("recent-jobs")))
	row := fmt.Sprintf("#recent-jobs #job-%d", jobID)
	require.Contains(t, text(t, bctx, row), "unauthorized (is the token revoked?)")
	do(t, bctx,
		chromedp.Click(chromedp.CSS(row+fmt.Sprintf(` a[href="/console/jobs/%d"]`, jobID))),
		chromedp.WaitVisible(chromedp.ID(fmt.Sprintf("retry-%d", jobID))),
	)
	submit(t, bctx, fmt.Sprintf("#retry-%d", jobID))
	require.Equal(t, fmt.Sprintf("Job %d will be tried again now.", jobID), strings.TrimSpace(text(t, bctx, "#notice")))
	// The page follows the job live until it is sent.
	waitText(t, bctx, "#job-status", "sent")
	require.Contains(t, text(t, bctx, "#job"), "Sent")
	require.True(t, strings.HasPrefix(text(t, bctx, "#job-retried"), "from the console at "),
		"the page says the attempt was the console's: %q", text(t, bctx, "#job-retried"))
	got := fake.WaitSent(t, ada.ID, 2, waitFor)
	require.Equal(t, reminder, got[1].Plain, "Ada got the reminder")
	j, err := st.Job(context.Background(), jobID)
	require.NoError(t, err)
	require.Equal(t, core.JobSent, j.Status)
	require.Equal(t, "console", j.RetriedBy, "the retry is recorded as the console's")
	screenshot(t, bctx, "console-journey-3-sent")
}

// routeMessage sends text to conversation id through the HTTP API, due
// now, and returns its job id.
func routeMessage(t *testing.T, b *testBundle, addr string, id int64, text string) int64 {
	t.Helper()
	body, err := json.Marshal(map[string]any{"conversation_id": id, "origin": "connector", "text": text})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/messages", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.env["PARLEY_API_TOKEN"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	var out struct{ ID int64 }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out.ID
}
