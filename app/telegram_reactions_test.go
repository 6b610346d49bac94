package app

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run on Telegram: tool react puts the bot's reaction on
// the user's message, mapped onto Telegram's set (❤️ is ❤ there).
func TestTelegramModelReacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "react", `{"emoji":"❤️"}`)))
	b.model.Enqueue(llmtest.Text("Congratulations!"))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	msg := fake.SendPrivate(ada, "I passed my exam!").Message
	require.Equal(t, "Congratulations!", fake.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)
	require.Equal(t, "❤", fake.BotReaction(ada.ID, msg.ID))
	reqs := b.model.Requests()
	require.Contains(t, reqs[0].ToolNames(), "react")
	res, ok := reqs[1].ToolMessage("c1")
	require.True(t, ok)
	require.Equal(t, "Reacted with ❤️.", res.Content)
}

// An emoji outside Telegram's set goes back to the model as the tool's
// error, naming the set; nothing reaches Telegram, and the model's second
// pick does.
func TestTelegramReactionOutsideTheSetIsAToolError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := telegramtest.NewServer(t)
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "react", `{"emoji":"🦀"}`)))
	b.model.Enqueue(llmtest.ToolCalls(llmtest.Call("c2", "react", `{"emoji":"👌"}`)))
	b.model.Enqueue(llmtest.Text("Crab noted."))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	msg := fake.SendPrivate(ada, "look, a crab").Message
	require.Equal(t, "Crab noted.", fake.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)

	reqs := b.model.Requests()
	require.Len(t, reqs, 3)
	res, ok := reqs[1].ToolMessage("c1")
	require.True(t, ok)
	var toolErr struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.Content), &toolErr), res.Content)
	require.Contains(t, toolErr.Error, `telegram cannot react with "🦀"`)
	require.Contains(t, toolErr.Error, "fixed set")
	require.Contains(t, toolErr.Error, "👍 👎 ❤ 🔥", "the model reads the set to pick from")
	res, ok = reqs[2].ToolMessage("c2")
	require.True(t, ok)
	require.Equal(t, "Reacted with 👌.", res.Content)
	require.Equal(t, "👌", fake.BotReaction(ada.ID, msg.ID))
	require.Equal(t, 1, fake.Calls("setMessageReaction"), "the crab never reached Telegram")
}
