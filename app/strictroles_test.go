package app

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run, a model served with Mistral's strict template (vLLM,
// llama.cpp): a message the owner's systems routed into the conversation
// sits after the bot's reply, so the next turn holds two assistant
// messages in a row. The template refuses that; the bot sends the turn
// again in the strict shape and the user gets the answer, not the failure
// message.
func TestStrictChatTemplateStillAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model = llmtest.NewServer(t, llmtest.WithChatTemplate(llmtest.TemplateMistral))
	fake := telegramtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, telegramConfig(fake, "")))

	b.model.Enqueue(llmtest.Text("Hi Ada!"))
	fake.SendPrivate(ada, "hello")
	require.Equal(t, "Hi Ada!", fake.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)

	code, out := callAPI(t, b, r.addr, http.MethodPost, "/api/v1/messages", map[string]any{"channel_type": "telegram",
		"channel_thread_id": "4242", "origin": "connector", "text": "Your build passed ✅"})
	require.Equal(t, http.StatusAccepted, code, out)
	require.Equal(t, "Your build passed ✅", fake.WaitSent(t, ada.ID, 2, waitFor)[1].Plain)
	b.waitStored(t, telegram.Platform, "4242", 3) // in the conversation before the user answers

	b.model.Enqueue(llmtest.Text("Congratulations on the build!"))
	fake.SendPrivate(ada, "nice!")
	sent := fake.WaitSent(t, ada.ID, 3, waitFor)
	require.Equal(t, "Congratulations on the build!", sent[2].Plain)
	reqs := b.model.Requests()
	for i, r := range reqs {
		t.Logf("request %d: %q", i, roles(r))
	}
	require.Len(t, reqs, 3, "the first turn, the refused request, the strict one")
	require.Equal(t, []string{"user:hello", "assistant:Hi Ada!\n\nYour build passed ✅", "user:nice!"}, roles(reqs[2]))
}
