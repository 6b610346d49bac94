package llm

import (
	"context"
	"encoding/json"
)

// Message roles understood by OpenAI-compatible servers.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message sent to or received from the model.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts, when set, is the message's content in pieces, text and images
	// (a user message with photos); Content is then ignored. Without Parts
	// the message is sent with Content as before.
	Parts      []Part     `json:"parts,omitempty"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// Part is one piece of a multi-part message: text, or an image. Exactly one
// field is set; a part with ImageURL is an image (its Text is ignored).
type Part struct {
	Text string `json:"text,omitempty"`
	// ImageURL is a data URL holding a JPEG or PNG, e.g.
	// "data:image/jpeg;base64,...". Never a platform's file URL: the model
	// server cannot fetch it, and some (Telegram's) hold the bot's token.
	ImageURL string `json:"image_url,omitempty"`
}

// ToolCall is the model's request to call a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolFunc executes a tool with the model's raw JSON arguments. An error is
// returned to the model as the tool's result; it never fails the turn.
type ToolFunc func(ctx context.Context, args json.RawMessage) (string, error)

// ToolOutput is a result that may carry images (an MCP tool's screenshot).
type ToolOutput struct {
	Text string
	// Images are data URLs (JPEG, PNG, GIF or WebP). A tool message holds
	// only text, so they reach the model as image parts of a user message
	// after the round's tool results.
	Images []string
}

// RichToolFunc executes a tool whose result may carry images.
type RichToolFunc func(ctx context.Context, args json.RawMessage) (ToolOutput, error)

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage
	Call       ToolFunc
	// CallRich, when set, is called instead of Call.
	CallRich RichToolFunc
	// Placeholder, when set, makes a successful result read-once: after the
	// model has answered once having seen it, the result is replaced in
	// the rest of the turn's messages by Placeholder(args) (a long record
	// the model has read need not ride along in every later round).
	Placeholder func(args json.RawMessage) string
}

// Usage is the token usage the server reported, summed over rounds.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// Request is one turn for the model: a prompt and the tools it may call.
type Request struct {
	// Model overrides the client's default model when set.
	Model    string
	Messages []Message
	Tools    []Tool
	// MaxToolRounds bounds how many rounds of tool calls are executed; zero
	// means the client's default.
	MaxToolRounds int
	// MaxTokens, when positive, bounds each completion of this request
	// instead of Config.MaxTokens.
	MaxTokens int
	// OnPartial, when set, streams each completion: it is called with
	// the whole raw content written so far each time it grows, and with
	// "" when a new completion starts (the next tool round, a retry).
	OnPartial func(text string)
}

// ToolCallResult is one executed tool call.
type ToolCallResult struct {
	Call    ToolCall
	Result  string
	IsError bool
	// Images are the data URLs the tool returned beside Result.
	Images []string `json:"-"`
}

// Result is the outcome of a turn: the model's final text, every message the
// loop appended after the request's messages (assistant tool-call messages,
// tool results and the final answer), the executed tool calls and the usage.
type Result struct {
	Content string
	// Reasoning is the reasoning_content the server returned (DeepSeek-R1,
	// vLLM and some Ollama builds send it beside the answer): every round's,
	// in order, joined by a blank line. It is never part of Appended, so it
	// is never sent back to the model. <think> tags inside Content are left
	// for the caller.
	Reasoning string
	// Refusal is the final message's refusal (OpenAI's structured refusal;
	// Content is then usually empty).
	Refusal   string
	Appended  []Message
	ToolCalls []ToolCallResult
	Usage     Usage
	// Model is the model that answered: the name the server gave in its
	// (last) response, else the one asked for. Empty only when no request
	// was answered.
	Model        string
	Rounds       int
	FinishReason string
}
