package app

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// reloadAPI asks the running bot to read its config again
// (POST /api/v1/reload) and returns the status and the answer.
func reloadAPI(t *testing.T, b *testBundle, addr string) (int, map[string]any) {
	t.Helper()
	return callAPI(t, b, addr, http.MethodPost, "/api/v1/reload", nil)
}

// telegramBot is a bots: entry with one Telegram adapter.
func telegramBot(id string, fake *telegramtest.Server) string {
	return fmt.Sprintf("  - id: %s\n    adapters:\n      web: {enabled: false}\n      telegram: {token: %q, api_url: %q}\n", id, fake.Token(), fake.URL())
}

// Through parley run: a reload adds a bot while the first one's user is
// writing, then removes the first; the bot left alone answers every
// message throughout, the added one answers from its start, the removed
// one stops reading its platform. A config that does not load, or that
// changes a shared section, is refused and the running bots go on.
func TestReloadAddsAndRemovesBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("re: " + r.LastUserMessage()) })
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	ben := telegramtest.User{ID: 5151, FirstName: "Ben"}
	head := "runs:\n  debounce: 0s\nbots:\n"
	cfg := b.writeConfig(t, head+telegramBot("ada", tgAda))
	r := b.start(t, cfg)

	tgAda.SendPrivate(ada, "one")
	tgAda.WaitSent(t, ada.ID, 1, waitFor)
	// Ada's user writes on while the config changes under the bot.
	tgAda.SendPrivate(ada, "two")
	b.writeConfig(t, head+telegramBot("ada", tgAda)+telegramBot("bob", tgBob))
	code, out := reloadAPI(t, b, r.addr)
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, "1 bots unchanged; added bob", out["reloaded"])
	tgAda.SendPrivate(ada, "three")
	tgBob.SendPrivate(ben, "hello bob")
	require.Equal(t, "re: hello bob", tgBob.WaitSent(t, ben.ID, 1, waitFor)[0].Plain)
	// "two" and "three" may be answered together (the newer message
	// restarts the turn); the model read both, and the last answer is
	// to "three".
	require.Eventually(t, func() bool {
		sent := tgAda.Sent(ada.ID)
		return len(sent) >= 2 && sent[len(sent)-1].Plain == "re: three"
	}, waitFor, 5*time.Millisecond, "ada's user got no answer to what they wrote during the reload: %+v", tgAda.Sent(ada.ID))
	var three []string
	for _, q := range b.model.Requests() {
		if q.LastUserMessage() == "three" {
			three = roles(q)
		}
	}
	require.Contains(t, three, "user:two", "nothing lost: the turn that answered three read two")

	// Refused: a config that does not load, and one changing a shared
	// section; both bots run on.
	b.writeConfig(t, head+"  - id: Bad Id\n")
	code, out = reloadAPI(t, b, r.addr)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, out["error"], "bots[0].id")
	b.llmTimeout = "3s"
	b.writeConfig(t, "scheduler: {max_attempts: 9}\n"+head+telegramBot("ada", tgAda)+telegramBot("bob", tgBob))
	code, out = reloadAPI(t, b, r.addr)
	require.Equal(t, http.StatusConflict, code)
	require.Contains(t, out["error"], "scheduler changed: these are shared by every bot and need a restart")

	b.llmTimeout = ""
	b.writeConfig(t, head+telegramBot("bob", tgBob))
	code, out = reloadAPI(t, b, r.addr)
	require.Equal(t, http.StatusOK, code, out)
	require.Equal(t, "1 bots unchanged; removed ada", out["reloaded"])
	polls := tgAda.Calls("getUpdates")
	tgBob.SendPrivate(ben, "still there?")
	require.Equal(t, "re: still there?", tgBob.WaitSent(t, ben.ID, 2, waitFor)[1].Plain)
	require.LessOrEqual(t, tgAda.Calls("getUpdates"), polls+1, "the removed bot stopped reading Telegram")
}
