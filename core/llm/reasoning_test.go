package llm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

func TestRunReturnsReasoningAndNeverSendsItBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	add := &addTool{}
	b.srv.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "add", `{"a":2,"b":3}`)).WithReasoning("I should add them."),
		llmtest.Text("<think>left for the core</think>2 + 3 = 5").WithReasoning("The tool said 5."),
		llmtest.Text("next turn"),
	)
	req := userSays("what is 2+3?")
	req.Tools = []llm.Tool{add.tool()}

	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "<think>left for the core</think>2 + 3 = 5", res.Content, "tags are not stripped here")
	require.Equal(t, "I should add them.\n\nThe tool said 5.", res.Reasoning)
	require.Empty(t, res.Refusal)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 2)
	require.False(t, reqs[1].HasReasoningContent(), "the tool round's assistant message goes back without its reasoning")
	require.NotContains(t, string(reqs[1].Body), "reasoning_content")
	require.NotContains(t, string(reqs[1].Body), "I should add them.")

	// A caller that keeps the appended messages in its history sends no
	// reasoning in the next turn either.
	next := userSays("thanks")
	next.Messages = append(append(req.Messages, res.Appended...), llm.Message{Role: llm.RoleUser, Content: "thanks"})
	_, err = b.client.Run(context.Background(), next)
	require.NoError(t, err)
	third := b.srv.Requests()[2]
	require.False(t, third.HasReasoningContent())
	require.NotContains(t, string(third.Body), "The tool said 5.")
}

func TestCompleteReturnsReasoningAndRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(
		llmtest.Text("a summary").WithReasoning("summarising"),
		llmtest.Refusal("I can't summarise that."),
	)
	res, err := b.client.Complete(context.Background(), userSays("summarise"))
	require.NoError(t, err)
	require.Equal(t, "a summary", res.Content)
	require.Equal(t, "summarising", res.Reasoning)

	res, err = b.client.Complete(context.Background(), userSays("summarise"))
	require.NoError(t, err)
	require.Empty(t, res.Content)
	require.Equal(t, "I can't summarise that.", res.Refusal)
	require.Equal(t, "stop", res.FinishReason)
}

func TestRunReturnsRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Refusal("I can't help with that."))
	res, err := b.client.Run(context.Background(), userSays("something bad"))
	require.NoError(t, err)
	require.Empty(t, res.Content)
	require.Equal(t, "I can't help with that.", res.Refusal)
	require.Equal(t, "stop", res.FinishReason)
	require.Equal(t, []llm.Message{{Role: llm.RoleAssistant}}, res.Appended)
}

func TestRunContentFilter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("").WithFinishReason("content_filter"))
	res, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Empty(t, res.Content)
	require.Equal(t, "content_filter", res.FinishReason)
}

// finishes records OnFinish calls.
type finishes struct {
	mu    sync.Mutex
	calls [][2]string
}

func (f *finishes) record(model, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, [2]string{model, reason})
}

func (f *finishes) all() [][2]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][2]string(nil), f.calls...)
}

func TestOnFinishIsCalledPerResponse(t *testing.T) {
	t.Parallel()
	f := &finishes{}
	b := setup(t, func(c *llm.Config) { c.OnFinish = f.record })
	add := &addTool{}
	b.srv.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "add", `{"a":1,"b":1}`)),
		llmtest.Text("2"),
		llmtest.Text("").WithFinishReason("content_filter"),
		llmtest.Raw(200, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}`),
		llmtest.Status(500).WithErrorMessage("down"),
	)
	req := userSays("1+1")
	req.Tools = []llm.Tool{add.tool()}
	_, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	light := userSays("summarise")
	light.Model = "light-model"
	_, err = b.client.Complete(context.Background(), light)
	require.NoError(t, err)
	_, err = b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	b.srv.Enqueue(llmtest.Status(500), llmtest.Status(500), llmtest.Status(500))
	_, err = b.client.Run(context.Background(), userSays("hi"))
	require.Error(t, err)

	require.Equal(t, [][2]string{
		{"test-model", "tool_calls"},
		{"test-model", "stop"},
		{"light-model", "content_filter"},
		{"test-model", "unknown"},
	}, f.all(), "one call per response received; none for a failure")
}

func TestThinkBlocksBesideToolCallsDoNotGoBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	add := &addTool{}
	b.srv.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "add", `{"a":2,"b":3}`)).WithText("<think>SECRET: they want a sum</think>Let me add."),
		llmtest.Text("5"),
	)
	req := userSays("what is 2+3?")
	req.Tools = []llm.Tool{add.tool()}
	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "SECRET: they want a sum", res.Reasoning)
	reqs := b.srv.Requests()
	require.Len(t, reqs, 2)
	require.NotContains(t, string(reqs[1].Body), "SECRET", "the tool round's thinking went back to the model")
	require.Contains(t, string(reqs[1].Body), "Let me add.", "its words still do")
	require.Equal(t, "Let me add.", res.Appended[0].Content)
}
