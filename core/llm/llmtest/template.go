package llmtest

import (
	"encoding/json"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// ChatTemplate is a strict chat template a model may be served with, as
// vLLM and llama.cpp apply them: the request is refused, before the model
// sees it, when its roles do not fit.
type ChatTemplate int

const (
	// TemplateAny takes any order of roles (OpenAI, most servers).
	TemplateAny ChatTemplate = iota
	// TemplateMistral is Mistral's (and Llama 2's): an optional system
	// message first, then user and assistant in turn, user first. A tool
	// call and its results stand outside the turns.
	TemplateMistral
	// TemplateGemma is Gemma's: Mistral's rule, and no system message at
	// all.
	TemplateGemma
)

// WithChatTemplate serves every model with template t; a request that
// does not fit gets vLLM's 400 with the template's own words
// ("Conversation roles must alternate user/assistant/user/assistant/...",
// "System role not supported"), and is recorded as refused.
func WithChatTemplate(t ChatTemplate) Option {
	return func(s *Server) { s.template = t }
}

// refusal is what template t says of msgs, "" when they fit.
func (t ChatTemplate) refusal(msgs []openai.ChatCompletionMessage) string {
	if t == TemplateAny {
		return ""
	}
	turn := openai.ChatMessageRoleUser
	for i, m := range msgs {
		switch {
		case m.Role == openai.ChatMessageRoleSystem:
			if t == TemplateGemma {
				return "System role not supported"
			}
			if i > 0 {
				return "Conversation roles must alternate user/assistant/user/assistant/..."
			}
		case m.Role == openai.ChatMessageRoleTool || len(m.ToolCalls) > 0:
			// A tool call and its results: the assistant's turn goes on.
			turn = openai.ChatMessageRoleAssistant
		case m.Role != turn:
			return "Conversation roles must alternate user/assistant/user/assistant/..."
		default:
			if turn == openai.ChatMessageRoleUser {
				turn = openai.ChatMessageRoleAssistant
			} else {
				turn = openai.ChatMessageRoleUser
			}
		}
	}
	return ""
}

// writeTemplateError answers as vLLM does when the chat template raises:
// 400, a body without OpenAI's "error" wrapper.
func writeTemplateError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400})
}
