package reqjson

import (
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

// testTools are tools as the llm package makes them: functions with raw
// JSON parameters, an empty object for a tool that takes none.
func testTools(desc string) []openai.Tool {
	tool := func(name, desc, params string) openai.Tool {
		return openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: name, Description: desc, Parameters: json.RawMessage(params)}}
	}
	return []openai.Tool{
		tool("set_mood", desc, `{"type": "object", "properties": {"valence": {"type": "number"}}}`),
		tool("list_facts", "Lists the facts.", `{"type":"object","properties":{}}`),
	}
}

// A set is encoded once; another set (one description changed) is another
// entry.
func TestToolsEncodedOnce(t *testing.T) {
	t.Parallel()
	tc := newToolsCache()
	a, err := tc.encoded(testTools("Sets the mood."))
	require.NoError(t, err)
	b, err := tc.encoded(testTools("Sets the mood."))
	require.NoError(t, err)
	require.Same(t, &a[0], &b[0])
	c, err := tc.encoded(testTools("Sets the bot's mood."))
	require.NoError(t, err)
	require.NotEqual(t, a, c)
	require.Equal(t, 2, tc.sets.Len())
}

// Tools that are not only what the llm package makes, and requests
// go-openai refuses because of their tools, are left to go-openai.
func TestToolsLeftToGoOpenAI(t *testing.T) {
	t.Parallel()
	tc := newToolsCache()
	odd := testTools("Sets the mood.")
	odd[0].Function.Parameters = map[string]any{"type": "object"}
	require.Nil(t, tc.spliced(openai.ChatCompletionRequest{Model: "m", Tools: odd}))
	require.Nil(t, tc.spliced(openai.ChatCompletionRequest{Model: "m"}))
	require.Nil(t, tc.spliced(openai.ChatCompletionRequest{Model: openai.GPT6Sol, Tools: testTools("Sets the mood.")}))
	require.NotNil(t, tc.spliced(openai.ChatCompletionRequest{Model: "m", Tools: testTools("Sets the mood.")}))
}
