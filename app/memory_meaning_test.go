package app

import (
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
