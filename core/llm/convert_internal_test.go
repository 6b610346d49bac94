package llm

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/internal/reqjson"
)

// Converting a text-only message is on every model call's path: parts must
// add no allocation there.
// (Not parallel: AllocsPerRun refuses to run in a parallel test.)
func TestTextOnlyMessageConversionDoesNotAllocate(t *testing.T) {
	m := Message{Role: RoleUser, Content: "hello", Name: "bob"}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = toOpenAIMessage(m) }))
}

// The tools a Run offers are what reqjson keeps encoded: were toOpenAITools
// to make them otherwise (a map of parameters, strict), every request would
// encode them anew, silently.
func TestOpenAIToolsAreSpliced(t *testing.T) {
	t.Parallel()
	tools := toOpenAITools([]Tool{
		{Name: "set_mood", Description: "Sets the mood.", Parameters: json.RawMessage(`{"type":"object"}`)},
		{Name: "list_facts", Description: "Lists the facts."},
	})
	sent, _ := reqjson.New().Presplice(context.Background(), openai.ChatCompletionRequest{Model: "m", Tools: tools})
	require.Nil(t, sent.Tools, "the tools go pre-encoded")
}
