package llm

import (
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("a", 400) // 100 tokens
	msgs := []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: text},
		{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: text},
			// A megabyte of data: URL is one image, not 250,000 tokens.
			{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "data:image/jpeg;base64," + strings.Repeat("A", 1<<20)}},
		}},
		{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "abcd", Arguments: text[:396]}}}},
	}
	tools := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: "abcd", Description: text[:396], Parameters: map[string]any{}, // {} is 2 bytes
	}}}
	want := 100 + 100 + 100 + 101 + 3*messageTokens + imageTokens + 50
	require.Equal(t, want, estimateTokens(msgs, tools, 50))
}
