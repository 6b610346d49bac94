package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

func TestRunText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("Hello! How was your day?").WithUsage(12, 7))

	res, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "Hello! How was your day?", res.Content)
	require.Equal(t, "stop", res.FinishReason)
	require.Zero(t, res.Rounds)
	require.Empty(t, res.ToolCalls)
	require.Equal(t, llm.Usage{PromptTokens: 12, CompletionTokens: 7, TotalTokens: 19}, res.Usage)
	require.Equal(t, []llm.Message{{Role: llm.RoleAssistant, Content: "Hello! How was your day?"}}, res.Appended)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "test-model", reqs[0].Chat.Model)
	require.False(t, reqs[0].Chat.Stream)
	msgs := reqs[0].Messages()
	require.Len(t, msgs, 2)
	require.Equal(t, "system", msgs[0].Role)
	require.Equal(t, "You are a test.", msgs[0].Content)
	require.Equal(t, "hi", msgs[1].Content)
}

// addTool records the arguments it was called with.
type addTool struct {
	mu    sync.Mutex
	calls []map[string]int
}

func (a *addTool) tool() llm.Tool {
	return llm.Tool{
		Name:        "add",
		Description: "Adds two numbers.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			var in map[string]int
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			a.mu.Lock()
			a.calls = append(a.calls, in)
			a.mu.Unlock()
			return fmt.Sprintf(`{"sum":%d}`, in["a"]+in["b"]), nil
		},
	}
}

func TestRunToolRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	add := &addTool{}
	b.srv.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "add", `{"a":2,"b":3}`)).WithUsage(10, 5),
		llmtest.Text("2 + 3 = 5").WithUsage(20, 3),
	)
	req := userSays("what is 2+3?")
	req.Tools = []llm.Tool{add.tool()}

	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "2 + 3 = 5", res.Content)
	require.Equal(t, 1, res.Rounds)
	require.Equal(t, []map[string]int{{"a": 2, "b": 3}}, add.calls)
	require.Equal(t, llm.Usage{PromptTokens: 30, CompletionTokens: 8, TotalTokens: 38}, res.Usage)
	require.Equal(t, []llm.ToolCallResult{{
		Call:   llm.ToolCall{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":3}`},
		Result: `{"sum":5}`,
	}}, res.ToolCalls)
	require.Equal(t, []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "add", Arguments: `{"a":2,"b":3}`}}},
		{Role: llm.RoleTool, Content: `{"sum":5}`, ToolCallID: "call_1"},
		{Role: llm.RoleAssistant, Content: "2 + 3 = 5"},
	}, res.Appended)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"add"}, reqs[0].ToolNames())
	params, err := json.Marshal(reqs[0].Chat.Tools[0].Function.Parameters)
	require.NoError(t, err)
	require.JSONEq(t, string(add.tool().Parameters), string(params))

	second := reqs[1].Messages()
	require.Len(t, second, 4)
	require.Equal(t, "assistant", second[2].Role)
	require.Len(t, second[2].ToolCalls, 1)
	require.Equal(t, "call_1", second[2].ToolCalls[0].ID)
	toolMsg, ok := reqs[1].ToolMessage("call_1")
	require.True(t, ok)
	require.Equal(t, `{"sum":5}`, toolMsg.Content)
}

func TestRunToolFailuresGoBackToModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	add := &addTool{}
	failing := llm.Tool{Name: "fail", Call: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("calendar is unavailable")
	}}
	panicking := llm.Tool{Name: "boom", Call: func(context.Context, json.RawMessage) (string, error) {
		panic("kaboom")
	}}
	b.srv.Enqueue(
		llmtest.ToolCalls(
			llmtest.Call("c1", "add", `{"a":1,`),
			llmtest.Call("c2", "add", `[1,2]`),
			llmtest.Call("c3", "no_such_tool", `{}`),
			llmtest.Call("c4", "fail", `{}`),
			llmtest.Call("c5", "boom", `{}`),
			llmtest.Call("c6", "add", `{"a":1,"b":1}`),
		),
		llmtest.Text("Sorry, some of that did not work."),
	)
	req := userSays("do things")
	req.Tools = []llm.Tool{add.tool(), failing, panicking}

	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "Sorry, some of that did not work.", res.Content)
	require.Len(t, res.ToolCalls, 6)

	want := map[string]string{
		"c1": `invalid arguments for tool "add": not valid JSON`,
		"c2": `invalid arguments for tool "add": not a JSON object`,
		"c3": `unknown tool "no_such_tool"`,
		"c4": `calendar is unavailable`,
		"c5": `tool "boom" panicked: kaboom`,
	}
	second := b.srv.Requests()[1]
	for id, msg := range want {
		var body struct{ Error string }
		toolMsg, ok := second.ToolMessage(id)
		require.True(t, ok, id)
		require.NoError(t, json.Unmarshal([]byte(toolMsg.Content), &body), id)
		require.Equal(t, msg, body.Error, id)
	}
	for i, r := range res.ToolCalls {
		require.Equal(t, i < 5, r.IsError, r.Call.ID)
	}
	ok6, _ := second.ToolMessage("c6")
	require.Equal(t, `{"sum":2}`, ok6.Content)
	require.Equal(t, []map[string]int{{"a": 1, "b": 1}}, add.calls)
	require.Contains(t, b.logs.String(), "tool panicked")
}

func TestRunEmptyArgumentsMeanNoArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var got string
	list := llm.Tool{Name: "list_facts", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		got = string(args)
		return "[]", nil
	}}
	b.srv.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "list_facts", "")), llmtest.Text("none"))
	req := userSays("facts?")
	req.Tools = []llm.Tool{list}
	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "{}", got)
	require.False(t, res.ToolCalls[0].IsError)
}

func TestRunMaxToolRounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		reqRounds int
		cfgRounds int
		want      int
	}{
		{name: "request", reqRounds: 2, cfgRounds: 5, want: 2},
		{name: "config default", cfgRounds: 3, want: 3},
		{name: "package default", want: llm.DefaultMaxToolRounds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *llm.Config) { c.MaxToolRounds = tc.cfgRounds })
			// A model that asks for a tool whenever it is offered one, and
			// also when it is not.
			b.srv.Respond(func(r llmtest.Request) llmtest.Response {
				n := len(r.Messages())
				if len(r.ToolNames()) == 0 {
					return llmtest.ToolCalls(llmtest.Call(fmt.Sprint("late", n), "tick", `{}`)).WithText("I give up, here is my answer.")
				}
				return llmtest.ToolCalls(llmtest.Call(fmt.Sprint("call", n), "tick", `{}`))
			})
			var mu sync.Mutex
			ticks := 0
			tick := llm.Tool{Name: "tick", Call: func(context.Context, json.RawMessage) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				ticks++
				return "ticked", nil
			}}
			req := userSays("loop")
			req.Tools = []llm.Tool{tick}
			req.MaxToolRounds = tc.reqRounds

			res, err := b.client.Run(context.Background(), req)
			require.NoError(t, err)
			require.Equal(t, tc.want, ticks)
			require.Equal(t, tc.want, res.Rounds)
			require.Len(t, res.ToolCalls, tc.want)
			require.Equal(t, "I give up, here is my answer.", res.Content)
			last := res.Appended[len(res.Appended)-1]
			require.Equal(t, llm.Message{Role: llm.RoleAssistant, Content: "I give up, here is my answer."}, last)

			reqs := b.srv.Requests()
			require.Len(t, reqs, tc.want+1)
			for _, r := range reqs[:tc.want] {
				require.Equal(t, []string{"tick"}, r.ToolNames())
			}
			require.Empty(t, reqs[tc.want].ToolNames(), "the final request offers no tools")
			require.Empty(t, reqs[tc.want].Chat.Tools)
		})
	}
}

func TestRunRejectsBadToolDefinitions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	noop := func(context.Context, json.RawMessage) (string, error) { return "", nil }
	for _, tools := range [][]llm.Tool{
		{{Name: "", Call: noop}},
		{{Name: "x"}},
		{{Name: "x", Call: noop}, {Name: "x", Call: noop}},
	} {
		req := userSays("hi")
		req.Tools = tools
		_, err := b.client.Run(context.Background(), req)
		var llmErr *llm.Error
		require.ErrorAs(t, err, &llmErr)
	}
	require.Empty(t, b.srv.Requests())
}

func TestRunToolWithoutSchemaSendsEmptyObjectSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("ok"))
	req := userSays("hi")
	req.Tools = []llm.Tool{{Name: "list_scheduled_private_messages", Call: func(context.Context, json.RawMessage) (string, error) { return "[]", nil }}}
	_, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	params, err := json.Marshal(b.srv.Requests()[0].Chat.Tools[0].Function.Parameters)
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(params))
}

func TestCompleteSendsNoToolsAndExecutesNone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "add", `{"a":1,"b":2}`)).WithText("a summary").WithUsage(3, 4))
	add := &addTool{}
	req := userSays("summarise")
	req.Tools = []llm.Tool{add.tool()}

	res, err := b.client.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "a summary", res.Content)
	require.Empty(t, add.calls)
	require.Empty(t, res.ToolCalls)
	require.Equal(t, llm.Usage{PromptTokens: 3, CompletionTokens: 4, TotalTokens: 7}, res.Usage)
	require.Equal(t, []llm.Message{{Role: llm.RoleAssistant, Content: "a summary"}}, res.Appended)
	require.Len(t, b.srv.Requests(), 1)
	require.Empty(t, b.srv.Requests()[0].Chat.Tools)
}

func TestRunNoChoicesIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Raw(200, `{"id":"x","object":"chat.completion","choices":[]}`))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Equal(t, "llm: response has no choices", llmErr.Error())
}

func TestRunMalformedJSONIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Malformed())
	_, err := b.client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Contains(t, err.Error(), "llm: malformed response")
	require.False(t, llmErr.Retryable)
	require.Len(t, b.srv.Requests(), 1, "a malformed 200 is not retried")
}

func TestRunReadOnceResultBecomesAPlaceholder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	read := llm.Tool{
		Name: "read", Parameters: json.RawMessage(`{"type":"object"}`),
		Call:        func(context.Context, json.RawMessage) (string, error) { return "a very long record", nil },
		Placeholder: func(args json.RawMessage) string { return "[read " + string(args) + "]" },
	}
	b.srv.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "read", `{"id":7}`)),
		llmtest.ToolCalls(llmtest.Call("c2", "read", `{"id":8}`)),
		llmtest.Text("done"),
	)
	req := userSays("read them")
	req.Tools = []llm.Tool{read}
	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "done", res.Content)
	reqs := b.srv.Requests()
	require.Len(t, reqs, 3)
	first, _ := reqs[1].ToolMessage("c1")
	require.Equal(t, "a very long record", first.Content, "the model sees the text once")
	first, _ = reqs[2].ToolMessage("c1")
	require.Equal(t, `[read {"id":7}]`, first.Content, "then the placeholder")
	second, _ := reqs[2].ToolMessage("c2")
	require.Equal(t, "a very long record", second.Content)
	require.Equal(t, "a very long record", res.ToolCalls[0].Result, "the run record keeps what the tool said")
}

func TestRunToolImagesFollowTheToolResultsAsImageParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const png = "data:image/png;base64,iVBORw0KGgo="
	shot := llm.Tool{
		Name: "screenshot",
		CallRich: func(context.Context, json.RawMessage) (llm.ToolOutput, error) {
			return llm.ToolOutput{Text: "a screenshot of the page", Images: []string{png}}, nil
		},
	}
	b.srv.Enqueue(llmtest.ToolCalls(llmtest.Call("call_1", "screenshot", `{}`)), llmtest.Text("I see a page."))
	req := userSays("show me")
	req.Tools = []llm.Tool{shot}
	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "I see a page.", res.Content)
	require.Equal(t, []string{png}, res.ToolCalls[0].Images)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 2)
	tool, ok := reqs[1].ToolMessage("call_1")
	require.True(t, ok)
	require.Equal(t, "a screenshot of the page", tool.Content, "the tool message holds the text only")
	msgs := reqs[1].Messages()
	last := msgs[len(msgs)-1]
	require.Equal(t, "user", last.Role, "the images come after the tool results, as a user message")
	require.Equal(t, []string{png}, reqs[1].ImageURLs())
	require.Contains(t, last.MultiContent[0].Text, "screenshot")
}
