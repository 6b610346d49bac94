package llm

import (
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

func TestBucketTakesMoreThanItHoldsWithoutDeadlock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &bucket{perMinute: 60, burst: 10} // one unit a second

	require.False(t, b.earliest(25).After(t0), "a full bucket lets even a request larger than it go")
	b.charge(t0, 25) // 15 in debt
	require.Equal(t, t0.Add(20*time.Second), b.earliest(5), "5 more need the debt paid and 5 refilled")
	require.Equal(t, t0.Add(25*time.Second), b.earliest(25), "more than the burst waits until it is full")

	b.charge(t0.Add(20*time.Second), 5)
	b.charge(t0, -5) // given back
	require.Equal(t, t0.Add(25*time.Second), b.earliest(10))
}

func TestBucketHoldsNoMoreThanItsBurst(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	b := &bucket{perMinute: 60, burst: 2}
	b.charge(t0, 1)
	// An hour idle refills it to 2, not to 3600.
	later := t0.Add(time.Hour)
	for range 2 {
		require.False(t, b.earliest(1).After(later))
		b.charge(later, 1)
	}
	require.Equal(t, later.Add(time.Second), b.earliest(1))
	// Giving back to a full bucket does not overfill it.
	idle := later.Add(time.Hour)
	b.charge(idle, -5)
	b.charge(idle, 2)
	require.Equal(t, idle.Add(time.Second), b.earliest(1))
}

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
