package llm

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"
)

// emptyParameters is sent for a tool without a schema: some servers reject a
// function without parameters.
const emptyParameters = `{"type":"object","properties":{}}`

func toOpenAIMessages(msgs []Message) []openai.ChatCompletionMessage {
	out := make([]openai.ChatCompletionMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, toOpenAIMessage(m))
	}
	return out
}

func toOpenAIMessage(m Message) openai.ChatCompletionMessage {
	om := openai.ChatCompletionMessage{
		Role:       m.Role,
		Content:    m.Content,
		Name:       m.Name,
		ToolCallID: m.ToolCallID,
	}
	if len(m.Parts) > 0 {
		// go-openai refuses to marshal a message with both Content and
		// MultiContent, and Parts supersede Content.
		om.Content = ""
		om.MultiContent = toOpenAIParts(m.Parts)
	}
	for _, tc := range m.ToolCalls {
		om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
			ID:       tc.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return om
}

// toOpenAIParts converts a message's parts; images go with detail "auto",
// leaving the server to pick the resolution (the caller has already bounded
// the image's size).
func toOpenAIParts(parts []Part) []openai.ChatMessagePart {
	out := make([]openai.ChatMessagePart, len(parts))
	for i, p := range parts {
		if p.ImageURL != "" {
			out[i] = openai.ChatMessagePart{
				Type:     openai.ChatMessagePartTypeImageURL,
				ImageURL: &openai.ChatMessageImageURL{URL: p.ImageURL, Detail: openai.ImageURLDetailAuto},
			}
			continue
		}
		out[i] = openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: p.Text}
	}
	return out
}

func fromOpenAIMessage(om openai.ChatCompletionMessage) Message {
	m := Message{Role: om.Role, Content: om.Content, Name: om.Name, ToolCallID: om.ToolCallID}
	if m.Role == "" {
		m.Role = RoleAssistant
	}
	for _, tc := range om.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: tc.Function.Arguments,
		})
	}
	return m
}

func toOpenAITools(tools []Tool) []openai.Tool {
	if len(tools) == 0 {
		return nil
	}
	out := make([]openai.Tool, 0, len(tools))
	for _, t := range tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(emptyParameters)
		}
		out = append(out, openai.Tool{
			Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	return out
}

func fromOpenAIUsage(u openai.Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
	}
}
