package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/browsertest"
)

// TestConsoleBotPickerInABrowser opens the overview of a parley with two
// bots in headless Chromium, picks bob in the picker and sees bob's
// conversation only, then every bot's again. A screenshot is kept.
func TestConsoleBotPickerInABrowser(t *testing.T) {
	t.Parallel()
	browser := browsertest.Find(t, "the web console's bot picker")
	b := setup(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("hi") })
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	r := b.start(t, b.writeConfig(t, "runs:\n  debounce: 0s\nbots:\n"+telegramBot("ada", tgAda)+telegramBot("bob", tgBob)))
	ben := telegramtest.User{ID: 5151, FirstName: "Ben"}
	tgAda.SendPrivate(ada, "hello ada")
	tgAda.WaitSent(t, ada.ID, 1, waitFor)
	tgBob.SendPrivate(ben, "hello bob")
	tgBob.WaitSent(t, ben.ID, 1, waitFor)

	bctx := browsertest.Start(t, browser, 1280, 1400, browserTimeout)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate("http://"+r.addr+"/console/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), b.env["PARLEY_API_TOKEN"]),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.ID("bot-picker")),
	))
	recent, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("recent")))
	require.NoError(t, err)
	require.Contains(t, recent, "Ada Lovelace")
	require.Contains(t, recent, "Ben")

	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`#bot-picker a[href="/console/?bot=bob"]`)),
		chromedp.WaitVisible(chromedp.ID("bot-title")),
	))
	title, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("h1")))
	require.NoError(t, err)
	require.Equal(t, "Overview · bot bob", strings.TrimSpace(title))
	recent, err = chromedp.Run(bctx, chromedp.Text(chromedp.ID("recent")))
	require.NoError(t, err)
	require.Contains(t, recent, "Ben")
	require.NotContains(t, recent, "Ada Lovelace", "bob's overview shows bob's conversation only")

	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot := filepath.Join(browsertest.ArtifactDir(t), "console-bot-picker.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of bob's overview with the bot picker: %s", shot)

	// Conversations, then "All bots": both, each naming its bot.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.CSS(`header nav a[href="/console/conversations?bot=bob"]`)),
		chromedp.WaitVisible(chromedp.ID("conversations")),
		chromedp.Click(chromedp.CSS(`#bot-picker a[href="/console/conversations"]`)),
		chromedp.WaitVisible(chromedp.CSS("#conversations td.bot")),
	))
	list, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("conversations")))
	require.NoError(t, err)
	require.Contains(t, list, "Ada Lovelace")
	require.Contains(t, list, "Ben")
	png, err = chromedp.Run(bctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	shot = filepath.Join(browsertest.ArtifactDir(t), "console-bot-picker-conversations.png")
	require.NoError(t, os.WriteFile(shot, png, 0o644))
	t.Logf("screenshot of every bot's conversations: %s", shot)
}
