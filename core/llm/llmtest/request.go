package llmtest

import (
	"encoding/base64"
	"errors"
	"strings"

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

// LastUserMessage returns the content of the last user message, or "". For
// a multi-part message it is the text parts joined by newlines.
func (r Request) LastUserMessage() string {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == openai.ChatMessageRoleUser {
			if len(m.MultiContent) == 0 {
				return m.Content
			}
			var texts []string
			for _, p := range m.MultiContent {
				if p.Type == openai.ChatMessagePartTypeText {
					texts = append(texts, p.Text)
				}
			}
			return strings.Join(texts, "\n")
		}
	}
	return ""
}

// LastUserParts returns the parts of the last user message (its
// MultiContent), or nil when that message is plain text or there is none.
func (r Request) LastUserParts() []openai.ChatMessagePart {
	for i := len(r.Chat.Messages) - 1; i >= 0; i-- {
		if m := r.Chat.Messages[i]; m.Role == openai.ChatMessageRoleUser {
			return m.MultiContent
		}
	}
	return nil
}

// ImageURLs returns the URL of every image_url part in the request's
// messages, in order. Decode a data URL with DecodeDataURL.
func (r Request) ImageURLs() []string {
	var urls []string
	for _, m := range r.Chat.Messages {
		for _, p := range m.MultiContent {
			if p.Type == openai.ChatMessagePartTypeImageURL && p.ImageURL != nil {
				urls = append(urls, p.ImageURL.URL)
			}
		}
	}
	return urls
}

// DecodeDataURL splits a base64 data URL ("data:image/png;base64,...")
// into its media type and bytes, so a test can compare an image the model
// received with the one sent. Anything else is an error.
func DecodeDataURL(u string) (mediaType string, data []byte, err error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", nil, errors.New("llmtest: not a data url")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, errors.New("llmtest: data url without a comma")
	}
	mediaType, ok = strings.CutSuffix(meta, ";base64")
	if !ok {
		return "", nil, errors.New("llmtest: data url is not base64")
	}
	data, err = base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, errors.New("llmtest: data url payload: " + err.Error())
	}
	return mediaType, data, nil
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
