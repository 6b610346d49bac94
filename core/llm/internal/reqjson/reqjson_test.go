package reqjson

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

// captureDoer keeps the body of the request it is given.
type captureDoer struct{ body []byte }

func (d *captureDoer) Do(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	again, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	b2, err := io.ReadAll(again)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(b, b2) || req.ContentLength != int64(len(b)) {
		return nil, io.ErrUnexpectedEOF
	}
	d.body = b
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(nil))}, nil
}

// A body with the tools spliced in says what go-openai would have written.
func TestToolsSplicedAsGoOpenAIWritesThem(t *testing.T) {
	t.Parallel()
	tc := newToolsCache()
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}},
		Tools: testTools("Sets the mood.")}
	want, err := json.Marshal(req)
	require.NoError(t, err)

	encoded := tc.spliced(req)
	require.NotNil(t, encoded)
	bare := req
	bare.Tools = nil
	body, err := json.Marshal(bare)
	require.NoError(t, err)
	httpReq, err := http.NewRequestWithContext(withSplicedJSON(context.Background(), splicedJSON{tools: encoded}), http.MethodPost, "http://x/", bytes.NewReader(body))
	require.NoError(t, err)
	var capture captureDoer
	_, err = Doer{Next: &capture}.Do(httpReq)
	require.NoError(t, err)

	var got, exp map[string]any
	require.NoError(t, json.Unmarshal(capture.body, &got))
	require.NoError(t, json.Unmarshal(want, &exp))
	require.Equal(t, exp, got)

	// Without tools in its context a request goes as it is.
	httpReq, err = http.NewRequest(http.MethodPost, "http://x/", bytes.NewReader(body))
	require.NoError(t, err)
	_, err = Doer{Next: &capture}.Do(httpReq)
	require.NoError(t, err)
	require.Equal(t, body, capture.body)
}

// A body with the messages and the tools spliced in says what go-openai
// would have written; a message with parts or tool calls, and the system
// prompt, are encoded each time, a plain one once.
func TestMessagesSplicedAsGoOpenAIWritesThem(t *testing.T) {
	t.Parallel()
	c := New()
	req := openai.ChatCompletionRequest{Model: `m "quoted" "messages":null`, Messages: []openai.ChatCompletionMessage{
		{Role: "system", Content: "You are Subaru.\n<b>&</b> \u2028"},
		{Role: "user", Content: "hi", Name: "ada"},
		{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "set_mood", Arguments: `{"v":1}`}}}},
		{Role: "tool", Content: "ok", ToolCallID: "c1"},
		{Role: "user", MultiContent: []openai.ChatMessagePart{{Type: "text", Text: "look"}}},
	}, Tools: testTools("Sets the mood."), MaxCompletionTokens: 100}
	want, err := json.Marshal(req)
	require.NoError(t, err)

	for range 2 { // the second time from the cache
		sent, ctx := c.Presplice(context.Background(), req)
		require.Nil(t, sent.Messages)
		require.Nil(t, sent.Tools)
		body, err := json.Marshal(sent)
		require.NoError(t, err)
		httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://x/", bytes.NewReader(body))
		require.NoError(t, err)
		var capture captureDoer
		_, err = Doer{Next: &capture}.Do(httpReq)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(capture.body))
	}
	require.Equal(t, 2, c.messages.entries.Len(), "the plain messages but the system prompt")
}

// The splice relies on go-openai writing a request without messages as
// "messages":null right after the model.
func TestGoOpenAIWritesNullMessages(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(openai.ChatCompletionRequest{Model: "m"})
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, []byte(`{"model":"m","messages":null`)), string(b))
}
