package llmtest

import (
	"strings"
	"time"
	"unicode"

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
	reasoning    string
	refusal      string
	stream       streamScript // how a streamed answer's text arrives
}

// Text answers with an assistant message holding content.
func Text(content string) Response {
	return Response{status: 200, content: content}
}

// Refusal answers the way OpenAI's models decline: an assistant message with
// refusal set, no content, and finish_reason "stop".
func Refusal(refusal string) Response {
	return Response{status: 200, refusal: refusal}
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

// WithReasoning sets the message's reasoning_content, as DeepSeek-R1, vLLM
// and some Ollama builds send what the model thought beside its answer.
// Streamed, it arrives as reasoning_content deltas before the content.
func (r Response) WithReasoning(reasoning string) Response {
	r.reasoning = reasoning
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

// limit applies a request's token bound the way a real server does: a text
// answer longer than maxTokens tokens (whitespace-separated words, see
// CountTokens) is cut after its first maxTokens words and finishes with
// "length" unless the script forced a finish reason; unscripted usage then
// reports maxTokens completion tokens. Tool-call answers, errors and answers
// within the bound are left alone.
func (r Response) limit(maxTokens int) Response {
	if maxTokens <= 0 || r.status != 200 || r.raw || r.malformed || len(r.toolCalls) > 0 {
		return r
	}
	cut, ok := firstTokens(r.content, maxTokens)
	if !ok {
		return r
	}
	r.content = cut
	if r.finishReason == "" {
		r.finishReason = string(openai.FinishReasonLength)
	}
	if r.usage == nil {
		r = r.WithUsage(DefaultPromptTokens, maxTokens)
	}
	return r
}

// CountTokens counts tokens the way the server does when it honours
// max_tokens: one token per whitespace-separated word. Real tokenizers
// differ; this one is simple enough to script against.
func CountTokens(s string) int {
	return len(strings.Fields(s))
}

// firstTokens returns s up to the end of its nth word and true, or s and
// false when s has no more than n words. What follows the nth word,
// whitespace included, is dropped.
func firstTokens(s string, n int) (string, bool) {
	words := 0
	inWord := false
	for i, c := range s {
		space := unicode.IsSpace(c)
		switch {
		case !space && !inWord:
			if words == n {
				return strings.TrimRightFunc(s[:i], unicode.IsSpace), true
			}
			words++
			inWord = true
		case space:
			inWord = false
		}
	}
	return s, false
}

func (r Response) message() openai.ChatCompletionMessage {
	msg := openai.ChatCompletionMessage{
		Role:             openai.ChatMessageRoleAssistant,
		Content:          r.content,
		Refusal:          r.refusal,
		ReasoningContent: r.reasoning,
	}
	for _, c := range r.toolCalls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
			ID:       c.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments},
		})
	}
	return msg
}
