package turns

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

func TestReadAnswer(t *testing.T) {
	t.Parallel()
	a := readAnswer(llm.Result{Content: "<think>b</think>Hi", Reasoning: "a", FinishReason: "stop"})
	require.Equal(t, answer{text: "Hi", reasoning: "a\n\nb"}, a)

	a = readAnswer(llm.Result{Content: "", Refusal: "I can't\nhelp with that.", FinishReason: "stop"})
	require.Equal(t, "the model refused to answer: I can't help with that.", a.refused)

	a = readAnswer(llm.Result{Content: "half a thou", FinishReason: "content_filter"})
	require.Contains(t, a.refused, "content filter")

	a = readAnswer(llm.Result{Content: "Once upon", FinishReason: "length"})
	require.True(t, a.cut)
	require.Empty(t, a.refused)
}

// completerFunc is a Completer from a func.
type completerFunc func(context.Context, llm.Request) (llm.Result, error)

func (f completerFunc) Complete(ctx context.Context, r llm.Request) (llm.Result, error) {
	return f(ctx, r)
}

func TestWithoutReasoning(t *testing.T) {
	t.Parallel()
	c := core.WithoutReasoning(completerFunc(func(context.Context, llm.Request) (llm.Result, error) {
		return llm.Result{Content: "<think>weighing it</think>\n\nThey like tea.", Reasoning: "first"}, nil
	}))
	res, err := c.Complete(context.Background(), llm.Request{})
	require.NoError(t, err)
	require.Equal(t, "They like tea.", res.Content)
	require.Equal(t, "first\n\nweighing it", res.Reasoning)
}
