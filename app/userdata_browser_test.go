package app

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// The console's part of issue 37 in headless Chromium, as an owner uses
// it: the overview lists a stranger's code and Approve lets them in; a
// conversation's page offers its user's data and erases it once the box
// is ticked. Screenshots are kept.
func TestConsolePairingAndErasureInABrowser(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Hello!") })
	tg := telegramtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, telegramConfig(tg, "bot:\n  dm_policy: pairing\n  allow_users: [\"telegram:4242\"]\n")))
	zoe := telegramtest.User{ID: 2002, FirstName: "Zoe"}
	tg.SendPrivate(zoe, "may I?")
	code := pairingCode.FindStringSubmatch(tg.WaitSent(t, zoe.ID, 1, waitFor)[0].Plain)[1]
	tg.SendPrivate(ada, "my secret word is pangolin")
	tg.WaitSent(t, ada.ID, 1, waitFor)

	bctx := consoleLogin(t, b, r.addr, 1280, 1400)
	do(t, bctx, chromedp.WaitVisible(chromedp.ID("pairing-"+code)))
	screenshot(t, bctx, "console-pairing-waiting")
	do(t, bctx, chromedp.Click(chromedp.ID("approve-"+code)), chromedp.WaitVisible(chromedp.ID("pairing-notice")))
	notice, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("pairing-notice")))
	require.NoError(t, err)
	require.Equal(t, "Code "+code+" approved: its user can talk to the bot now, and was told so.", notice)
	require.Contains(t, tg.WaitSent(t, zoe.ID, 2, waitFor)[1].Plain, "you're in")

	conv := b.conversationOn(t, "telegram", "4242").ID
	do(t, bctx, chromedp.Navigate(fmt.Sprintf("http://%s/console/conversations/%d", r.addr, conv)),
		chromedp.WaitVisible(chromedp.ID("their-data")))
	links, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("their-data")))
	require.NoError(t, err)
	require.Contains(t, links, "JSON")
	require.Contains(t, links, "Markdown")
	screenshot(t, bctx, "console-their-data")
	do(t, bctx, chromedp.Click(chromedp.CSS(`#erase-form input[name=confirm]`)), chromedp.Click(chromedp.ID("erase")),
		chromedp.WaitVisible(chromedp.ID("notice")))
	notice, err = chromedp.Run(bctx, chromedp.Text(chromedp.ID("notice")))
	require.NoError(t, err)
	require.Regexp(t, fmt.Sprintf(`^Conversation %d was erased: \d+ rows deleted\.$`, conv), notice)
	screenshot(t, bctx, "console-erased")
}
