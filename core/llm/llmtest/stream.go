package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// writeStream sends resp as server-sent events the way OpenAI streams: any
// reasoning_content and refusal deltas, the text split into a few deltas, tool calls as indexed deltas whose arguments
// arrive in pieces, a final chunk with the finish reason, an optional usage
// chunk, and "data: [DONE]".
func (s *Server) writeStream(w http.ResponseWriter, chat openai.ChatCompletionRequest, resp Response, id string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	created := time.Now().Unix()

	send := func(chunk openai.ChatCompletionStreamResponse) {
		chunk.ID, chunk.Object, chunk.Created, chunk.Model = id, "chat.completion.chunk", created, s.answerModel(chat.Model)
		b, _ := json.Marshal(chunk)
		_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
		_ = rc.Flush()
	}
	delta := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) {
		send(openai.ChatCompletionStreamResponse{
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: d, FinishReason: finish}},
		})
	}

	if resp.malformed {
		_, _ = io.WriteString(w, "data: {\"id\":\"broken\n\n")
		_ = rc.Flush()
		return
	}

	delta(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, "")
	// Reasoning servers stream what the model thinks before its answer.
	for _, part := range split(resp.reasoning, 2) {
		delta(openai.ChatCompletionStreamChoiceDelta{ReasoningContent: part}, "")
	}
	for _, part := range split(resp.refusal, 2) {
		delta(openai.ChatCompletionStreamChoiceDelta{Refusal: part}, "")
	}
	for _, part := range split(resp.content, 3) {
		delta(openai.ChatCompletionStreamChoiceDelta{Content: part}, "")
	}
	for i, c := range resp.toolCalls {
		index := i
		delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
			Index:    &index,
			ID:       c.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name},
		}}}, "")
		for _, part := range split(c.Arguments, 2) {
			delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
				Index:    &index,
				Function: openai.FunctionCall{Arguments: part},
			}}}, "")
		}
	}
	delta(openai.ChatCompletionStreamChoiceDelta{}, resp.finish())
	if chat.StreamOptions != nil && chat.StreamOptions.IncludeUsage {
		usage := resp.usageOrDefault()
		send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: &usage})
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// split cuts s into at most n non-empty pieces on rune boundaries.
func split(s string, n int) []string {
	runes := []rune(s)
	if len(runes) == 0 {
		return nil
	}
	size := (len(runes) + n - 1) / n
	var parts []string
	for start := 0; start < len(runes); start += size {
		end := min(start+size, len(runes))
		parts = append(parts, string(runes[start:end]))
	}
	return parts
}
