package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// TestConsoleShowsACaughtPromise: the model promises a check-in without
// scheduling it, then rewords its reply. The transcript shows the reply
// sent and, beside it, the promise caught, the first words and how it
// ended.
func TestConsoleShowsACaughtPromise(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	r := startBot(t, b, b.writeConfig(t, telegramConfig(fake, "")))
	b.model.Enqueue(
		llmtest.Text("Good luck tonight! I'll check in tomorrow morning to hear how it went."),
		llmtest.Text("Good luck tonight! Tell me tomorrow how it went."),
	)
	fake.SendPrivate(ada, "first date tonight 😬")
	sent := fake.WaitSent(t, ada.ID, 1, waitFor)
	require.Equal(t, "Good luck tonight! Tell me tomorrow how it went.", sent[0].Plain)
	b.waitStored(t, telegram.Platform, "4242", 2)
	conv, err := b.openStoreFile(t).ConversationByThread(context.Background(), telegram.Platform, "4242")
	require.NoError(t, err)

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	do(t, bctx,
		chromedp.Navigate(fmt.Sprintf("http://%s/console/conversations/%d", r.addr, conv.ID)),
		chromedp.WaitVisible(chromedp.CSS("#transcript details.promise")),
	)
	summary := text(t, bctx, "#transcript details.promise > summary")
	require.Equal(t, "Promise caught: “I'll check in tomorrow morning” · reworded: the reply sent promises nothing", summary)
	do(t, bctx,
		chromedp.Click(chromedp.CSS("#transcript details.promise > summary")),
		chromedp.WaitVisible(chromedp.CSS("#transcript details.promise dl")),
	)
	shown := text(t, bctx, "#transcript details.promise dl")
	require.Contains(t, shown, "the patterns · when: tomorrow morning")
	require.Contains(t, shown, "Good luck tonight! I'll check in tomorrow morning to hear how it went.")
	require.Contains(t, shown, "Your reply has not been sent yet.")
	screenshot(t, bctx, "console-promise")
}
