package app

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run with two bots: the console's picker lists both, and
// ?bot=bob shows bob's conversation only, while every bot's list shows
// both, each with its bot, and bob's transcript opens from it with the
// photo his user sent.
func TestConsoleWithTwoBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("hi") })
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	r := b.start(t, b.writeConfig(t, "runs:\n  debounce: 0s\nbots:\n"+telegramBot("ada", tgAda)+telegramBot("bob", tgBob)))
	ben := telegramtest.User{ID: 5151, FirstName: "Ben"}
	tgAda.SendPrivate(ada, "hello ada")
	tgAda.WaitSent(t, ada.ID, 1, waitFor)
	bread := breadPNG(t)
	tgBob.SendPhoto(ben, telegramtest.Media{Data: bread, Caption: "hello bob"})
	tgBob.WaitSent(t, ben.ID, 1, waitFor)

	c := newConsoleClient(t, r.addr, "127.0.0.1")
	cookie := c.login(t, b.env["PARLEY_API_TOKEN"])
	get := func(path string) string {
		t.Helper()
		resp, body := c.do(t, http.MethodGet, path, nil, cookie)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return body
	}

	overview := get("/console/")
	require.Contains(t, overview, `id="bot-picker"`)
	require.Contains(t, overview, `>All bots</a>`)
	require.Contains(t, overview, `<a href="/console/?bot=ada">ada</a>`)
	require.Contains(t, overview, `<a href="/console/?bot=bob">bob</a>`)
	require.Contains(t, overview, "Ada Lovelace")
	require.Contains(t, overview, "Ben")

	bobs := get("/console/?bot=bob")
	require.Contains(t, bobs, "Ben")
	require.NotContains(t, bobs, "Ada Lovelace", "bob's overview shows bob's conversation only")

	list := get("/console/conversations?bot=bob")
	require.Contains(t, list, "Ben")
	require.NotContains(t, list, "Ada Lovelace")

	all := get("/console/conversations")
	require.Contains(t, all, `<td data-label="Bot" class="bot"><span class="badge bot">ada</span></td>`)
	require.Contains(t, all, `<td data-label="Bot" class="bot"><span class="badge bot">bob</span></td>`)
	var bobConv int64
	st := b.openStoreFile(t)
	require.NoError(t, st.DB().Raw(`SELECT id FROM conversations WHERE bot_id = 'bob'`).Scan(&bobConv).Error)
	require.Contains(t, all, fmt.Sprintf(`href="/console/conversations/%d"`, bobConv))
	transcript := get(fmt.Sprintf("/console/conversations/%d", bobConv))
	require.Contains(t, transcript, "hello bob")
	require.Contains(t, transcript, "bot bob")
	// Ben's photo is fetched through bob's Telegram bot: ada's token would
	// not find it.
	thumb := regexp.MustCompile(`<img class="thumb" src="([^"]+)"`).FindStringSubmatch(transcript)
	require.NotNil(t, thumb, "the transcript shows the photo")
	resp, img := c.do(t, http.MethodGet, thumb[1], nil, cookie)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, string(bread), img)
}
