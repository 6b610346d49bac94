package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
)

// toolSet is the tools of one request, looked up by name. A slice, not a
// map: a request offers a few dozen tools at most, and it is held for the
// whole turn, which on a busy bot is thousands of turns at once.
type toolSet []Tool

// indexTools checks tools, rejecting definitions no model could use.
func indexTools(tools []Tool) (toolSet, error) {
	for i, t := range tools {
		switch {
		case t.Name == "":
			return nil, &Error{Message: "llm: tool without a name"}
		case t.Call == nil && t.CallRich == nil:
			return nil, &Error{Message: fmt.Sprintf("llm: tool %q has no Call func", t.Name)}
		}
		if _, dup := toolSet(tools[:i]).find(t.Name); dup {
			return nil, &Error{Message: fmt.Sprintf("llm: duplicate tool %q", t.Name)}
		}
	}
	return toolSet(tools), nil
}

// find returns the tool called name.
func (ts toolSet) find(name string) (Tool, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// execute runs one tool call. Every failure becomes a {"error": "..."}
// result for the model, which can then apologise or retry; a misbehaving
// tool or model must not fail the user's turn.
func (c *Client) execute(ctx context.Context, tools toolSet, call ToolCall) ToolCallResult {
	fail := func(format string, args ...any) ToolCallResult {
		return ToolCallResult{Call: call, Result: errorResult(fmt.Sprintf(format, args...)), IsError: true}
	}
	tool, ok := tools.find(call.Name)
	if !ok {
		return fail("unknown tool %q", call.Name)
	}
	args := bytes.TrimSpace([]byte(call.Arguments))
	if len(args) == 0 {
		// Models often send "" for a tool without parameters.
		args = []byte("{}")
	}
	if !json.Valid(args) {
		return fail("invalid arguments for tool %q: not valid JSON", call.Name)
	}
	if args[0] != '{' {
		return fail("invalid arguments for tool %q: not a JSON object", call.Name)
	}
	out, err := c.callTool(context.WithValue(ctx, toolCallIDKey{}, call.ID), tool, json.RawMessage(args))
	if err != nil {
		return fail("%s", err.Error())
	}
	return ToolCallResult{Call: call, Result: out.Text, Images: out.Images}
}

// callTool calls the tool, turning a panic into an error.
func (c *Client) callTool(ctx context.Context, tool Tool, args json.RawMessage) (out ToolOutput, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.ErrorContext(ctx, "llm: tool panicked", "tool", tool.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("tool %q panicked: %v", tool.Name, p)
		}
	}()
	if tool.CallRich != nil {
		return tool.CallRich(ctx, args)
	}
	text, err := tool.Call(ctx, args)
	return ToolOutput{Text: text}, err
}

// errorResult renders a failure as the JSON object the model receives.
func errorResult(msg string) string {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	return string(b)
}

type toolCallIDKey struct{}

// ToolCallID returns the id of the tool call a ToolFunc is answering ("" outside
// one), so that what a tool creates can name the call that created it.
func ToolCallID(ctx context.Context) string {
	id, _ := ctx.Value(toolCallIDKey{}).(string)
	return id
}
