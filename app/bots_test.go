package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// personaModel answers as the persona its system prompt names, and keeps
// each persona's requests.
type personaModel struct {
	mu   sync.Mutex
	seen map[string][]llmtest.Request
}

func (m *personaModel) respond(r llmtest.Request) llmtest.Response {
	who := "nobody"
	if msgs := r.Messages(); len(msgs) > 0 {
		for _, name := range []string{"Ada", "Bob"} {
			if strings.Contains(msgs[0].Content, "You are "+name+",") {
				who = name
			}
		}
	}
	m.mu.Lock()
	m.seen[who] = append(m.seen[who], r)
	m.mu.Unlock()
	return llmtest.Text(who + " here.")
}

// said is everything the requests of persona who held.
func (m *personaModel) said(who string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, r := range m.seen[who] {
		for _, msg := range r.Messages() {
			b.WriteString(msg.Content + "\n")
		}
	}
	return b.String()
}

// Through parley run with two bots in one process: ada on a Telegram bot
// and Discord, bob on another Telegram bot and Slack. Each answers its
// own users as its own persona; the same person writing to both is two
// conversations, and what they told one bot never reaches the other's
// model.
func TestTwoBotsInOneProcessKeepTheirUsersApart(t *testing.T) {
	t.Parallel()
	b := setup(t)
	model := &personaModel{seen: map[string][]llmtest.Request{}}
	b.model.Respond(model.respond)
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	dc := discordtest.NewServer(t)
	sl := slacktest.NewServer(t)
	b.start(t, b.writeConfig(t, fmt.Sprintf(`runs:
  debounce: 0s
bots:
  - id: ada
    plugins:
      persona: {name: Ada, text: "You are Ada, a patient tutor."}
    adapters:
      web: {enabled: false}
      telegram: {token: %q, api_url: %q}
      discord: {token: %q, api_url: %q}
  - id: bob
    plugins:
      persona: {name: Bob, text: "You are Bob, a cheerful companion."}
    adapters:
      web: {enabled: false}
      telegram: {token: %q, api_url: %q}
      slack: {mode: socket, bot_token: %q, app_token: %q, signing_secret: %q, api_url: %q}
`, tgAda.Token(), tgAda.URL(), dc.Token(), dc.URL(), tgBob.Token(), tgBob.URL(),
		sl.BotToken(), sl.AppToken(), sl.SigningSecret(), sl.APIURL())))
	sl.WaitConnections(t, 1, waitFor)

	tgAda.SendPrivate(ada, "my secret for Ada is apricot")
	require.Equal(t, "Ada here.", tgAda.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)
	tgBob.SendPrivate(ada, "my secret for Bob is blueberry")
	require.Equal(t, "Bob here.", tgBob.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)
	tgAda.SendPrivate(ada, "what was my secret?")
	require.Equal(t, "Ada here.", tgAda.WaitSent(t, ada.ID, 2, waitFor)[1].Plain)

	channel, _ := dc.SendDM(lin, "hello Ada")
	dc.WaitShows(t, channel, waitFor, "Ada here.")
	dm, _ := sl.SendDM(mei, "hello Bob")
	sl.WaitShows(t, dm, waitFor, "Bob here.")

	require.Contains(t, model.said("Ada"), "apricot")
	require.NotContains(t, model.said("Ada"), "blueberry", "what Ada's user told Bob never reaches Ada's model")
	require.Contains(t, model.said("Bob"), "blueberry")
	require.NotContains(t, model.said("Bob"), "apricot")
	require.NotContains(t, model.said("Bob"), "hello Ada")
	require.Empty(t, model.said("nobody"), "every request is one persona's")

	var convs []struct {
		BotID, Platform string
	}
	st := b.openStoreFile(t)
	require.NoError(t, st.DB().Raw(`SELECT bot_id, platform FROM conversations ORDER BY bot_id, platform`).Scan(&convs).Error)
	require.Equal(t, []struct{ BotID, Platform string }{{"ada", "discord"}, {"ada", "telegram"}, {"bob", "slack"}, {"bob", "telegram"}}, convs,
		"the same Telegram user is two conversations, one per bot")
}

// Through parley run with two bots, the routing API takes a bot: a
// message by channel needs one (a 400 names the bots), goes out through
// that bot's adapter into its own conversation, and a conversation_id of
// the other bot's is refused; lists take ?bot= and say each row's bot.
func TestRoutingAPIWithTwoBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(r llmtest.Request) llmtest.Response { return llmtest.Text("hi") })
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	r := b.start(t, b.writeConfig(t, "runs:\n  debounce: 0s\nbots:\n"+telegramBot("ada", tgAda)+telegramBot("bob", tgBob)))
	tgAda.SendPrivate(ada, "hello ada")
	tgAda.WaitSent(t, ada.ID, 1, waitFor)
	tgBob.SendPrivate(ada, "hello bob")
	tgBob.WaitSent(t, ada.ID, 1, waitFor)

	api := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		return callAPI(t, b, r.addr, method, path, body)
	}
	to := map[string]any{"channel_type": "telegram", "channel_thread_id": fmt.Sprint(ada.ID), "origin": "connector", "text": "Your parcel is here."}
	code, out := api(http.MethodPost, "/api/v1/messages", to)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "bot is required: this parley runs ada or bob", out["error"])
	to["bot"] = "carol"
	code, out = api(http.MethodPost, "/api/v1/messages", to)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, out["error"], `bot "carol"`)

	to["bot"] = "bob"
	code, out = api(http.MethodPost, "/api/v1/messages", to)
	require.Equal(t, http.StatusAccepted, code, out)
	require.Equal(t, "Your parcel is here.", tgBob.WaitSent(t, ada.ID, 2, waitFor)[1].Plain)
	require.Len(t, tgAda.Sent(ada.ID), 1, "not through ada's bot")

	code, all := api(http.MethodGet, "/api/v1/conversations", nil)
	require.Equal(t, http.StatusOK, code)
	convs := all["conversations"].([]any)
	require.Len(t, convs, 2, "one conversation per bot")
	var adaConv float64
	for _, c := range convs {
		if c.(map[string]any)["bot"] == "ada" {
			adaConv = c.(map[string]any)["id"].(float64)
		}
	}
	require.NotZero(t, adaConv)
	code, only := api(http.MethodGet, "/api/v1/conversations?bot=bob", nil)
	require.Equal(t, http.StatusOK, code)
	require.Len(t, only["conversations"].([]any), 1)
	require.Equal(t, "bob", only["conversations"].([]any)[0].(map[string]any)["bot"])

	code, out = api(http.MethodPost, "/api/v1/messages", map[string]any{"conversation_id": adaConv, "bot": "bob", "origin": "api", "text": "x"})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, out["error"], "is bot ada's, not bob's")
	code, out = api(http.MethodPost, "/api/v1/messages", map[string]any{"conversation_id": adaConv, "origin": "api", "text": "From the front desk."})
	require.Equal(t, http.StatusAccepted, code, out)
	require.Equal(t, "From the front desk.", tgAda.WaitSent(t, ada.ID, 2, waitFor)[1].Plain, "its conversation says the bot")
}

// callAPI calls the running bot's API at addr with the token and decodes
// its JSON; headers are name, value pairs.
func callAPI(t *testing.T, b *testBundle, addr, method, path string, body any, headers ...string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.env["PARLEY_API_TOKEN"])
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// `parley chat --bot bob` talks to bob in the terminal, as bob; the
// conversation is bob's. An unknown bot is a usage error.
func TestChatWithOneOfSeveralBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	model := &personaModel{seen: map[string][]llmtest.Request{}}
	b.model.Respond(model.respond)
	cfg := b.writeConfig(t, `bots:
  - id: ada
    plugins: {persona: {name: Ada, text: "You are Ada, a patient tutor."}}
    adapters: {web: {enabled: false}, telegram: {token: "111:ada-token"}}
  - id: bob
    plugins: {persona: {name: Bob, text: "You are Bob, a cheerful companion."}}
    adapters: {web: {enabled: false}, telegram: {token: "222:bob-token"}, terminal: {enabled: false, user: kim}}
`)
	var out, stderr coretest.Logs
	code := Run(context.Background(), []string{"chat", "--bot", "bob", "-c", cfg}, IO{In: strings.NewReader("hello there\n"), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	require.Contains(t, out.String(), "Bob here.")
	require.Empty(t, model.said("Ada"))
	st := b.openStoreFile(t)
	conv, err := st.ForBot("bob").ConversationByThread(context.Background(), terminal.Platform, "console:kim")
	require.NoError(t, err)
	require.Equal(t, "bob", conv.BotID)

	code = Run(context.Background(), []string{"chat", "--bot", "carol", "-c", cfg}, IO{In: strings.NewReader(""), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), `--bot "carol": the config runs no such bot`)
}

// A single bot's deployment moves under bots: as the bot with id
// default, beside a new one: after the restart its users' conversations
// go on where they were (the old rows are the default bot's), and the new
// bot starts with none of them.
func TestSingleBotMovesUnderBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	model := &personaModel{seen: map[string][]llmtest.Request{}}
	b.model.Respond(model.respond)
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	adaPersona := `{name: Ada, text: "You are Ada, a patient tutor."}`
	single := b.start(t, b.writeConfig(t, fmt.Sprintf(`runs:
  debounce: 0s
plugins:
  persona: %s
adapters:
  web: {enabled: false}
  telegram: {token: %q, api_url: %q}
`, adaPersona, tgAda.Token(), tgAda.URL())))
	tgAda.SendPrivate(ada, "my secret is apricot")
	require.Equal(t, "Ada here.", tgAda.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)
	single.stop(t)

	b.start(t, b.writeConfig(t, fmt.Sprintf(`runs:
  debounce: 0s
bots:
  - id: default
    plugins:
      persona: %s
    adapters:
      web: {enabled: false}
      telegram: {token: %q, api_url: %q}
  - id: bob
    plugins:
      persona: {name: Bob, text: "You are Bob, a cheerful companion."}
    adapters:
      web: {enabled: false}
      telegram: {token: %q, api_url: %q}
`, adaPersona, tgAda.Token(), tgAda.URL(), tgBob.Token(), tgBob.URL())))
	tgAda.SendPrivate(ada, "what was my secret?")
	require.Equal(t, "Ada here.", tgAda.WaitSent(t, ada.ID, 2, waitFor)[1].Plain)
	tgBob.SendPrivate(ada, "hello Bob")
	require.Equal(t, "Bob here.", tgBob.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)

	model.mu.Lock()
	last := model.seen["Ada"][len(model.seen["Ada"])-1]
	model.mu.Unlock()
	var history strings.Builder
	for _, m := range last.Messages() {
		history.WriteString(m.Content + "\n")
	}
	require.Contains(t, history.String(), "my secret is apricot", "the default bot's turn after the move reads what its user said before it")
	require.NotContains(t, model.said("Bob"), "apricot", "the new bot reads nothing of the default bot's users")

	var convs []struct{ BotID string }
	st := b.openStoreFile(t)
	require.NoError(t, st.DB().Raw(`SELECT bot_id FROM conversations ORDER BY bot_id`).Scan(&convs).Error)
	require.Equal(t, []struct{ BotID string }{{"bob"}, {"default"}}, convs, "the user's conversation with the old bot is still one")
}
