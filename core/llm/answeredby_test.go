package llm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// A result names the model that answered, as the server names it (an
// alias resolves to a version), else the one asked for; Run's is the last
// round's.
func TestResultNamesTheModelThatAnswered(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithModel("gpt-4o-2024-08-06"))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "gpt-4o"})
	require.NoError(t, err)
	srv.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "noop", `{}`)), llmtest.Text("done"))
	req := userSays("hi")
	req.Tools = []llm.Tool{{Name: "noop", Description: "does nothing",
		Call: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }}}
	res, err := client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o-2024-08-06", res.Model)
	require.Equal(t, 1, res.Rounds)

	srv.Enqueue(llmtest.Text("a summary"))
	res, err = client.Complete(context.Background(), userSays("sum up"))
	require.NoError(t, err)
	require.Equal(t, "gpt-4o-2024-08-06", res.Model)

	// A server that names no model: the one asked for.
	quiet := llmtest.NewServer(t, llmtest.WithModel(""))
	client, err = llm.New(llm.Config{BaseURL: quiet.URL(), Model: "llama3"})
	require.NoError(t, err)
	quiet.Enqueue(llmtest.Text("hi"))
	res, err = client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "llama3", res.Model)
	req = userSays("hi")
	req.Model = "qwen2"
	quiet.Enqueue(llmtest.Text("hi"))
	res, err = client.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "qwen2", res.Model)
}
