package llmtest

import (
	openai "github.com/sashabaranov/go-openai"
)

// Request is one chat completion request the server received.
type Request struct {
	// Chat is the decoded request body.
	Chat openai.ChatCompletionRequest
	// Authorization is the Authorization header as sent, e.g. "Bearer sk-…".
	Authorization string
	// Body is the raw request body.
	Body []byte
}

// Messages returns the request's messages.
func (r Request) Messages() []openai.ChatCompletionMessage { return r.Chat.Messages }

// ToolNames returns the names of the tools offered to the model, in order.
func (r Request) ToolNames() []string {
	var names []string
	for _, t := range r.Chat.Tools {
		if t.Function != nil {
			names = append(names, t.Function.Name)
		}
	}
	return names
}

// LastUserMessage returns the content of the last user message, or "".
func (r Request) LastUserMessage() string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == openai.ChatMessageRoleUser {
			return m.Content
		}
	}
	return ""
}

// ToolMessage returns the tool message answering callID and whether there is
// one.
func (r Request) ToolMessage(callID string) (openai.ChatCompletionMessage, bool) {
	for _, m := range r.Chat.Messages {
		if m.Role == openai.ChatMessageRoleTool && m.ToolCallID == callID {
			return m, true
		}
	}
	return openai.ChatCompletionMessage{}, false
}

// MaxTokens returns the completion bound the request sent, as
// max_completion_tokens or max_tokens (the former when both were sent), or
// 0 when it sent none.
func (r Request) MaxTokens() int {
	if r.Chat.MaxCompletionTokens > 0 {
		return r.Chat.MaxCompletionTokens
	}
	return r.Chat.MaxTokens //lint:ignore SA1019 what local-model clients send
}

// HasReasoningContent reports whether any message in the request carries
// reasoning_content: a client should never send the model's reasoning back.
func (r Request) HasReasoningContent() bool {
	for _, m := range r.Chat.Messages {
		if m.ReasoningContent != "" {
			return true
		}
	}
	return false
}

// Echo is a responder that answers with the last user message verbatim. Use
// it with Server.Respond for manual runs and plugin tests that only need a
// model that says something.
func Echo(req Request) Response {
	return Text(req.LastUserMessage())
}
