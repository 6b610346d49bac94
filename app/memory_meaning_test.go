package app

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run with plugins.memory.embeddings: the user's messages
// are embedded in the background, and when the model looks for "my
// sister's wedding" retrieve_history finds what the user said in other
// words ("Ana is getting married in June"), which the words alone miss.
func TestMemoryByMeaningThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model = llmtest.NewServer(t, llmtest.WithEmbedding(llmtest.Embedding{Concepts: map[string][]string{
		"wedding": {"wedding", "married", "marry", "bride"},
	}}))
	var mu sync.Mutex
	var toolResult string
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		if out, ok := r.ToolMessage("call-1"); ok {
			mu.Lock()
			toolResult = out.Content
			mu.Unlock()
			return llmtest.Text("She is getting married in June!")
		}
		if strings.Contains(r.LastUserMessage(), "wedding") {
			return llmtest.ToolCalls(llmtest.Call("call-1", "retrieve_history", `{"keyword": "my sister's wedding"}`))
		}
		return llmtest.Text("How lovely!")
	})
	tg := telegramtest.NewServer(t)
	b.start(t, b.writeConfig(t, `runs:
  debounce: 0s
plugins:
  memory:
    embeddings: {model: embed-test, dimensions: 32}
adapters:
  web: {enabled: false}
  telegram: {token: "`+tg.Token()+`", api_url: "`+tg.URL()+`"}
`))
	tg.SendPrivate(ada, "Ana is getting married in June")
	require.Equal(t, "How lovely!", tg.WaitSent(t, ada.ID, 1, waitFor)[0].Plain)
	// The background pass embeds both messages within its 5 s.
	b.model.WaitEmbeddedInputs(t, 2, waitFor)
	st := b.openStoreFile(t)
	require.Eventually(t, func() bool {
		var n int
		return st.DB().Raw(`SELECT count(*) FROM embeddings WHERE model = 'embed-test@32'`).Scan(&n).Error == nil && n == 2
	}, waitFor, 20*time.Millisecond, "both messages' vectors kept")

	tg.SendPrivate(ada, "what did I tell you about my sister's wedding?")
	require.Equal(t, "She is getting married in June!", tg.WaitSent(t, ada.ID, 2, waitFor)[1].Plain)
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, toolResult, "Ana is getting married in June", "found by meaning: no word of the query is in it")
	for _, r := range b.model.EmbeddingRequests() {
		require.Equal(t, "embed-test", r.Model)
		require.Equal(t, 32, r.Dimensions)
	}
}

// Recall on every turn, not only a session's first: in a session begun
// with /new, the second message ("what should I wear to my sister's
// wedding?") brings what the user said in another session in other
// words, with its date, into that turn's system prompt; the next,
// unrelated message brings nothing; the console's run record shows what
// the turn was told.
func TestRecallEveryTurnThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model = llmtest.NewServer(t, llmtest.WithEmbedding(llmtest.Embedding{Concepts: map[string][]string{
		"wedding": {"wedding", "married", "marry", "bride"},
	}}))
	var mu sync.Mutex
	systems := map[string]string{} // the user's message: the system prompt it was answered with
	b.model.Respond(func(r llmtest.Request) llmtest.Response {
		mu.Lock()
		systems[r.LastUserMessage()] = r.Messages()[0].Content
		mu.Unlock()
		return llmtest.Text("Noted.")
	})
	tg := telegramtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, `runs:
  debounce: 0s
plugins:
  memory:
    embeddings: {model: embed-test, dimensions: 32}
adapters:
  telegram: {token: "`+tg.Token()+`", api_url: "`+tg.URL()+`"}
`))
	require.Contains(t, r.stderr.String(), `msg="memory by meaning is on: messages are embedded in the background and searched in this process" plugin=memory model=embed-test@32 auto_recall=true backlog=`,
		"the start says what a newcomer turned on")
	tg.SendPrivate(ada, "Ana is getting married in June")
	tg.WaitSent(t, ada.ID, 1, waitFor)
	b.model.WaitEmbeddedInputs(t, 2, waitFor)
	st := b.openStoreFile(t)
	require.Eventually(t, func() bool {
		var n int
		return st.DB().Raw(`SELECT count(*) FROM embeddings`).Scan(&n).Error == nil && n == 2
	}, waitFor, 20*time.Millisecond, "both messages' vectors kept")

	tg.SendPrivate(ada, "/new")
	tg.WaitSent(t, ada.ID, 2, waitFor)
	asked := []string{"good morning!", "what should I wear to my sister's wedding?", "the weather is grey today"}
	for i, text := range asked {
		tg.SendPrivate(ada, text)
		tg.WaitSent(t, ada.ID, 3+i, waitFor)
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotContains(t, systems[asked[0]], "Ana is getting married", "the session's first turn relates to nothing")
	wedding := systems[asked[1]]
	require.Contains(t, wedding, "## Related from before")
	require.Regexp(t, `- \[\w{3} \d{1,2} \w{3} \d{4}\] User: Ana is getting married in June`, wedding,
		"recalled with its date at the session's second turn")
	require.NotContains(t, systems[asked[2]], "Related from before", "an unrelated message recalls nothing")

	c := newConsoleClient(t, r.addr, "127.0.0.1")
	cookie := c.login(t, b.env["PARLEY_API_TOKEN"])
	resp, page := c.do(t, http.MethodGet, fmt.Sprintf("/console/conversations/%d", b.conversationOn(t, "telegram", fmt.Sprint(ada.ID)).ID), nil, cookie)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, page, "Told this turn")
	require.Contains(t, page, "User: Ana is getting married in June", "the run record shows what was recalled")
}
