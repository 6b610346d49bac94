package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/browsertest"
)

// TestChatCommandsInTheWebChatBrowser: in the web chat of `parley run`, in
// headless Chromium, a user asks for a reminder (the model schedules it),
// then types /reminders and /cancel 1. The listing shows as a formatted
// list with the reminder's text and time in the user's zone, no Markdown
// marker shows, the cancel says what it cancelled, and neither command
// reached the model. A screenshot is kept.
func TestChatCommandsInTheWebChatBrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web chat's commands")
	b := setup(t)
	r := b.start(t, b.writeConfig(t, "runs: {debounce: 0s}\nbot: {timezone: Europe/Berlin}\n"))
	due := time.Now().Add(3 * time.Hour).Truncate(time.Minute)
	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "schedule_private_message",
			fmt.Sprintf(`{"send_at":%q,"message_text":"Time to **stretch** your legs!"}`, due.Format(time.RFC3339)))),
		llmtest.Text("I'll remind you."),
	)

	bctx := browsertest.Start(t, browser, 900, 1000, browserTimeout)
	eval := func(js string) any {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[any](js))
		require.NoError(t, err, js)
		return v
	}
	assistant := func() []string {
		t.Helper()
		v := eval(`Array.from(document.querySelectorAll(".msg.assistant")).map(m => m.innerText.trim())`)
		var out []string
		for _, x := range v.([]any) {
			out = append(out, x.(string))
		}
		return out
	}
	say := func(text string, replies int) string {
		t.Helper()
		require.NoError(t, chromedp.Do(bctx, chromedp.SendKeys(chromedp.ID("text"), text+"\n")))
		require.Eventually(t, func() bool { return len(assistant()) >= replies }, waitFor, 20*time.Millisecond,
			"no answer to %q", text)
		got := assistant()
		return got[replies-1]
	}
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("http://"+r.addr+"/"), chromedp.WaitVisible(chromedp.ID("text"))))

	require.Equal(t, "I'll remind you.", say("remind me to stretch in three hours", 1))
	listing := say("/reminders", 2)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	require.Contains(t, listing, "Your reminders (times in Europe/Berlin)")
	require.Contains(t, listing, "Time to stretch your legs!", "the reminder's text, its Markdown rendered")
	require.Contains(t, listing, due.In(berlin).Format("15:04"), "the due time in the user's zone")
	require.Contains(t, listing, "Send /cancel and a number to cancel one.")
	for _, marker := range []string{"**", "__"} {
		require.NotContains(t, listing, marker, "no Markdown marker shows")
	}
	require.Equal(t, float64(1), eval(`document.querySelectorAll(".msg.assistant")[1].querySelectorAll("ol > li").length`),
		"the listing is a numbered list")

	cancelled := say("/cancel 1", 3)
	require.True(t, strings.HasPrefix(cancelled, "Cancelled number 1: “Time to stretch your legs!”"), cancelled)
	require.Len(t, b.model.Requests(), 2, "the commands never reached the model (2 requests: the tool round and the answer)")

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG screenshot")
	shot := filepath.Join(browsertest.ArtifactDir(t), "web-chat-commands.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of /reminders and /cancel in the web chat: %s", shot)
}
