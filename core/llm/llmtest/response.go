package llmtest

import (
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Default usage reported when a response does not set its own, so code that
// sums usage sees non-zero numbers.
const (
	DefaultPromptTokens     = 10
	DefaultCompletionTokens = 5
)

// ToolCall is one scripted tool call in a ToolCalls response.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Call builds a scripted tool call. args is sent verbatim as the call's
// arguments string, so tests can script invalid JSON too.
func Call(id, name, args string) ToolCall {
	return ToolCall{ID: id, Name: name, Arguments: args}
}

// Response is one scripted answer of the fake model. Build one with Text,
// ToolCalls, Status, Malformed or Raw and refine it with the With methods;
// Response is a value, so every With returns a modified copy.
type Response struct {
	status       int
	body         string // raw body for Status and Raw
	raw          bool
	retryAfter   string
	content      string
	toolCalls    []ToolCall
	malformed    bool
	delay        time.Duration
	hold         <-chan struct{}
	usage        *openai.Usage
	finishReason string
}

// Text answers with an assistant message holding content.
func Text(content string) Response {
	return Response{status: 200, content: content}
}

// ToolCalls answers with an assistant message asking for the given calls.
func ToolCalls(calls ...ToolCall) Response {
	return Response{status: 200, toolCalls: append([]ToolCall(nil), calls...)}
}

// Status answers with an HTTP error status and an OpenAI-style error body.
func Status(code int) Response {
	return Response{status: code}
}

// Malformed answers 200 with a body that is not valid JSON (or, when
// streaming, an event that is not valid JSON).
func Malformed() Response {
	return Response{status: 200, malformed: true}
}

// Raw answers with the given status and body verbatim, as JSON. Use it for
// shapes the other constructors cannot express, e.g. a response without
// choices.
func Raw(status int, body string) Response {
	return Response{status: status, body: body, raw: true}
}

// WithRetryAfter sets the Retry-After header (delta-seconds or HTTP-date).
func (r Response) WithRetryAfter(v string) Response {
	r.retryAfter = v
	return r
}

// WithErrorMessage sets the error message of a Status response.
func (r Response) WithErrorMessage(msg string) Response {
	r.body = msg
	return r
}

// WithDelay makes the server wait d before answering, or until the request's
// context is done, whichever comes first.
func (r Response) WithDelay(d time.Duration) Response {
	r.delay = d
	return r
}

// WithHold makes the server answer only once gate is closed (after any
// delay), or give up when the client does: a slow model whose answer the
// test releases when it is ready, with no wall-clock guessing.
func (r Response) WithHold(gate <-chan struct{}) Response {
	r.hold = gate
	return r
}

// WithUsage sets the reported token usage; total is their sum.
func (r Response) WithUsage(prompt, completion int) Response {
	r.usage = &openai.Usage{
		PromptTokens:     prompt,
		CompletionTokens: completion,
		TotalTokens:      prompt + completion,
	}
	return r
}

// WithText sets the assistant text, e.g. alongside tool calls.
func (r Response) WithText(content string) Response {
	r.content = content
	return r
}

// WithFinishReason overrides the finish reason (default "stop" for text,
// "tool_calls" for tool calls).
func (r Response) WithFinishReason(reason string) Response {
	r.finishReason = reason
	return r
}

func (r Response) usageOrDefault() openai.Usage {
	if r.usage != nil {
		return *r.usage
	}
	return openai.Usage{
		PromptTokens:     DefaultPromptTokens,
		CompletionTokens: DefaultCompletionTokens,
		TotalTokens:      DefaultPromptTokens + DefaultCompletionTokens,
	}
}

func (r Response) finish() openai.FinishReason {
	switch {
	case r.finishReason != "":
		return openai.FinishReason(r.finishReason)
	case len(r.toolCalls) > 0:
		return openai.FinishReasonToolCalls
	default:
		return openai.FinishReasonStop
	}
}

func (r Response) message() openai.ChatCompletionMessage {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: r.content}
	for _, c := range r.toolCalls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
			ID:       c.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments},
		})
	}
	return msg
}
