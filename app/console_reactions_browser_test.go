package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// TestConsoleShowsReactionsEditsAndDeletes: through parley run on
// Discord, the user reacts to the bot's reply, edits one message and
// deletes another; the owner sees each on the conversation's page in
// Chromium: the emoji under the reply, the edited message marked, the
// deleted one said to be gone.
func TestConsoleShowsReactionsEditsAndDeletes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		if r.LastUserMessage() == "make me tea" {
			return llmtest.Text("Tea is brewing.")
		}
		return llmtest.Text("Noted.")
	})
	r := startBot(t, b, b.writeConfig(t, discordConfig(fake)+"bot:\n  timezone: Europe/Berlin\n  ack_reaction: \"👀\"\n"))
	fake.WaitReady(t, waitFor)

	channel, tea := fake.SendDM(lin, "make me tea")
	reply := fake.WaitSent(t, channel, 1, waitFor)[0]
	_, pin := fake.SendDM(lin, "my pin is 1234")
	fake.WaitSent(t, channel, 2, waitFor)
	st := b.openStoreFile(t)
	conv, err := st.ConversationByThread(context.Background(), discord.Platform, channel)
	require.NoError(t, err)
	_, err = st.MessageByPlatformID(context.Background(), conv.ID, reply.MessageID, core.RoleAssistant)
	require.NoError(t, err, "the reply's id is stored with its run, before the second turn")

	fake.ReactDM(lin, reply.MessageID, "👍", false)
	fake.ReactDM(lin, reply.MessageID, "🍵", false)
	fake.EditDM(lin, tea, "make me green tea")
	fake.DeleteDM(lin, pin)
	waitReactions(t, b, channel, []string{"👍", "🍵"})
	require.Eventually(t, func() bool {
		edited, err1 := st.MessageByPlatformID(context.Background(), conv.ID, tea, core.RoleUser)
		gone, err2 := st.MessageByPlatformID(context.Background(), conv.ID, pin, core.RoleUser)
		return err1 == nil && err2 == nil && edited.Content == "make me green tea" && gone.Deleted()
	}, waitFor, 5e6, "the edit and the deletion are stored")

	bctx := consoleLogin(t, b, r.addr, desktopWidth, desktopHeight)
	do(t, bctx,
		chromedp.Navigate(fmt.Sprintf("http://%s/console/conversations/%d", r.addr, conv.ID)),
		chromedp.WaitVisible(chromedp.ID("transcript")),
	)
	require.Equal(t, "👍\n🍵\nthe user's reactions", text(t, bctx, "#transcript .msg-role-assistant .msg-reactions"),
		"under the reply the user reacted to")
	transcript := text(t, bctx, "#transcript")
	require.Contains(t, transcript, "make me green tea")
	require.NotContains(t, transcript, "make me tea\n")
	require.NotContains(t, transcript, "my pin is 1234")
	require.Contains(t, text(t, bctx, "#transcript .msg-edited"), "edited by the user")
	require.Contains(t, text(t, bctx, "#transcript .msg-deleted"), "deleted by the user")
	require.Contains(t, transcript, "The user deleted this message: its text is gone")
	screenshot(t, bctx, "console-reactions")
}
