//lint:file-ignore SA1019 the tests send max_tokens as clients of local servers do

package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// post sends body to the chat endpoint with the given Authorization header
// and returns the status and the decoded JSON answer.
func post(t *testing.T, srv *llmtest.Server, auth, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// firstMessage returns choices[0].message of a decoded answer.
func firstMessage(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	choices, ok := body["choices"].([]any)
	require.True(t, ok, "no choices in %v", body)
	require.NotEmpty(t, choices)
	msg, ok := choices[0].(map[string]any)["message"].(map[string]any)
	require.True(t, ok)
	return msg
}

// streamed collects a streamed answer.
type streamed struct {
	reasoning, refusal, content string
	order                       []string // kinds of deltas in order of arrival
	finish                      openai.FinishReason
}

func readStream(t *testing.T, client *openai.Client, req openai.ChatCompletionRequest) streamed {
	t.Helper()
	req.Stream = true
	stream, err := client.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer stream.Close()
	var out streamed
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		for _, c := range chunk.Choices {
			if c.Delta.ReasoningContent != "" {
				out.reasoning += c.Delta.ReasoningContent
				out.order = append(out.order, "reasoning")
			}
			if c.Delta.Refusal != "" {
				out.refusal += c.Delta.Refusal
				out.order = append(out.order, "refusal")
			}
			if c.Delta.Content != "" {
				out.content += c.Delta.Content
				out.order = append(out.order, "content")
			}
			if c.FinishReason != "" {
				out.finish = c.FinishReason
			}
		}
	}
}

func TestWithReasoning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("42").WithReasoning("six times seven"))
	status, body := post(t, b.srv, "", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
	require.Equal(t, http.StatusOK, status)
	msg := firstMessage(t, body)
	require.Equal(t, "six times seven", msg["reasoning_content"])
	require.Equal(t, "42", msg["content"])
}

func TestWithReasoningStreamsReasoningFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("The answer is 42.").WithReasoning("Let me think: six times seven."))
	got := readStream(t, b.client, chat("q"))
	require.Equal(t, "Let me think: six times seven.", got.reasoning)
	require.Equal(t, "The answer is 42.", got.content)
	require.Equal(t, "reasoning", got.order[0])
	last := strings.LastIndex(strings.Join(got.order, " "), "reasoning")
	first := strings.Index(strings.Join(got.order, " "), "content")
	require.Less(t, last, first, "every reasoning delta comes before the content: %v", got.order)
}

func TestRefusal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Refusal("I can't help with that."))
	status, body := post(t, b.srv, "", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
	require.Equal(t, http.StatusOK, status)
	msg := firstMessage(t, body)
	require.Equal(t, "I can't help with that.", msg["refusal"])
	require.Empty(t, msg["content"])
	require.Equal(t, "stop", body["choices"].([]any)[0].(map[string]any)["finish_reason"])

	b.srv.Enqueue(llmtest.Refusal("No."))
	resp, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.NoError(t, err)
	require.Equal(t, "No.", resp.Choices[0].Message.Refusal)
	require.Empty(t, resp.Choices[0].Message.Content)
}

func TestRefusalStreams(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Refusal("I can't help with that."))
	got := readStream(t, b.client, chat("q"))
	require.Equal(t, "I can't help with that.", got.refusal)
	require.Empty(t, got.content)
	require.Equal(t, openai.FinishReasonStop, got.finish)
}

func TestContentFilterHasNoContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("").WithFinishReason("content_filter"))
	_, body := post(t, b.srv, "", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
	msg := firstMessage(t, body)
	require.Empty(t, msg["content"], "a filtered answer has no content, as OpenAI sends it")
	require.Equal(t, "content_filter", body["choices"].([]any)[0].(map[string]any)["finish_reason"])
}

func TestMaxTokensCutsLongText(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"max_tokens", "max_completion_tokens"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(llmtest.Text("one two  three\nfour five"))
			_, body := post(t, b.srv, "", `{"model":"m","messages":[{"role":"user","content":"q"}],"`+field+`":3}`)
			require.Equal(t, "one two  three", firstMessage(t, body)["content"])
			require.Equal(t, "length", body["choices"].([]any)[0].(map[string]any)["finish_reason"])
			usage := body["usage"].(map[string]any)
			require.InDelta(t, 3, usage["completion_tokens"], 0, "usage agrees with the cut")
			require.InDelta(t, llmtest.DefaultPromptTokens+3, usage["total_tokens"], 0)
			require.Equal(t, 3, b.srv.Requests()[0].MaxTokens())
		})
	}
}

func TestMaxTokensLeavesOtherAnswersAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(
		llmtest.Text("one two three"),                                        // within the bound
		llmtest.Text("one two three four").WithFinishReason("stop"),          // forced finish reason
		llmtest.Text("one two three four").WithUsage(1, 99),                  // scripted usage
		llmtest.ToolCalls(llmtest.Call("c1", "f", `{}`)).WithText("a b c d"), // tool calls
		llmtest.Text("one two three four"),                                   // no bound
	)
	req := chat("q")
	req.MaxTokens = 3

	resp, err := b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "one two three", resp.Choices[0].Message.Content)
	require.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
	require.Equal(t, llmtest.DefaultCompletionTokens, resp.Usage.CompletionTokens)

	resp, err = b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "one two three", resp.Choices[0].Message.Content)
	require.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)

	resp, err = b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, openai.FinishReasonLength, resp.Choices[0].FinishReason)
	require.Equal(t, 99, resp.Usage.CompletionTokens)

	resp, err = b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "a b c d", resp.Choices[0].Message.Content)
	require.Equal(t, openai.FinishReasonToolCalls, resp.Choices[0].FinishReason)

	resp, err = b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.NoError(t, err)
	require.Equal(t, "one two three four", resp.Choices[0].Message.Content)
	require.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
}

func TestMaxTokensCutsStreamedText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("Hello there, streaming world!"))
	req := chat("q")
	req.MaxTokens = 2
	got := readStream(t, b.client, req)
	require.Equal(t, "Hello there,", got.content)
	require.Equal(t, openai.FinishReasonLength, got.finish)
}

func TestCountTokens(t *testing.T) {
	t.Parallel()
	require.Equal(t, 0, llmtest.CountTokens("  "))
	require.Equal(t, 3, llmtest.CountTokens(" one\ttwo\n three "))
}

func TestWithAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-right-0123456789wxyz"
	srv := llmtest.NewServer(t, llmtest.WithAPIKey(key))
	srv.Enqueue(llmtest.Text("welcome"))

	const wrong = "sk-wrong-0123456789abcd"
	status, body := post(t, srv, "Bearer "+wrong, `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusUnauthorized, status)
	e := body["error"].(map[string]any)
	require.Equal(t, "invalid_request_error", e["type"])
	require.Equal(t, "invalid_api_key", e["code"])
	msg := e["message"].(string)
	require.True(t, strings.HasPrefix(msg, "Incorrect API key provided: sk-...abcd."), msg)
	require.NotContains(t, msg, wrong)

	status, body = post(t, srv, "", `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, body["error"].(map[string]any)["message"], "You didn't provide an API key")

	require.Equal(t, 1, srv.Pending(), "a refused request takes no scripted answer")
	require.Len(t, srv.Requests(), 2, "refused requests are recorded")

	status, body = post(t, srv, "Bearer "+key, `{"model":"m","messages":[]}`)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "welcome", firstMessage(t, body)["content"])

	cfg := openai.DefaultConfig(wrong)
	cfg.BaseURL = srv.URL()
	_, err := openai.NewClientWithConfig(cfg).ListModels(context.Background())
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.HTTPStatusCode)
}

func TestSetAPIKeyFailsThenRecovers(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithAPIKey("sk-test"))
	b.srv.Enqueue(llmtest.Text("ok"))
	_, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.NoError(t, err)

	b.srv.SetAPIKey("sk-rotated-key-0000")
	b.srv.Enqueue(llmtest.Text("ok again"))
	_, err = b.client.CreateChatCompletion(context.Background(), chat("q"))
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.HTTPStatusCode)

	b.srv.SetAPIKey("sk-test")
	resp, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.NoError(t, err)
	require.Equal(t, "ok again", resp.Choices[0].Message.Content)
}

func TestWithMaxTokensField(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithMaxTokensField("max_completion_tokens"))
	b.srv.Enqueue(llmtest.Text("fine"))

	status, body := post(t, b.srv, "", `{"model":"m","messages":[],"max_tokens":5}`)
	require.Equal(t, http.StatusBadRequest, status)
	e := body["error"].(map[string]any)
	require.Equal(t, "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", e["message"])
	require.Equal(t, "invalid_request_error", e["type"])
	require.Equal(t, "max_tokens", e["param"])
	require.Equal(t, "unsupported_parameter", e["code"])
	require.Equal(t, 1, b.srv.Pending())

	req := chat("q")
	req.MaxCompletionTokens = 5
	resp, err := b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "fine", resp.Choices[0].Message.Content)
	require.Len(t, b.srv.Requests(), 2)
}

func TestWithMaxTokensFieldReverse(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithMaxTokensField("max_tokens"))
	req := chat("q")
	req.MaxCompletionTokens = 5
	_, err := b.client.CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusBadRequest, apiErr.HTTPStatusCode)
	require.Equal(t, "Unsupported parameter: 'max_completion_tokens' is not supported with this model. Use 'max_tokens' instead.", apiErr.Message)
	require.Equal(t, "unsupported_parameter", apiErr.Code)
}

func TestWithMaxTokensFieldRejectsUnknownName(t *testing.T) {
	t.Parallel()
	require.Panics(t, func() { llmtest.WithMaxTokensField("max_output_tokens") })
}

func TestWithLatency(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithLatency(time.Minute), llmtest.WithResponder(llmtest.Echo))
	for i := range 2 {
		// A second is long enough for the request to reach the server on
		// a loaded machine (50 ms was not, under CI's race detector) and
		// far shorter than the minute the server would wait.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		_, err := b.client.CreateChatCompletion(ctx, chat("q"))
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "every answer waits")
		require.Less(t, time.Since(start), 10*time.Second, "the wait ends when the client gives up")
		require.Len(t, b.srv.Requests(), i+1, "the request reached the server before the client gave up")
	}
}

func TestRequestHelpers(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithResponder(llmtest.Echo))

	req := chat("q")
	_, err := b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	req.MaxTokens = 7
	req.Messages = append(req.Messages,
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "a", ReasoningContent: "thought"},
		openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "b"})
	_, err = b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)

	reqs := b.srv.Requests()
	require.Zero(t, reqs[0].MaxTokens())
	require.False(t, reqs[0].HasReasoningContent())
	require.Equal(t, 7, reqs[1].MaxTokens())
	require.True(t, reqs[1].HasReasoningContent())
}
