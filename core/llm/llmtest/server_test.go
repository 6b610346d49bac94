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

type testBundle struct {
	srv    *llmtest.Server
	client *openai.Client
}

func setup(t *testing.T, opts ...llmtest.Option) testBundle {
	t.Helper()
	srv := llmtest.NewServer(t, opts...)
	cfg := openai.DefaultConfig("sk-test")
	cfg.BaseURL = srv.URL()
	return testBundle{srv: srv, client: openai.NewClientWithConfig(cfg)}
}

func chat(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:    "m",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
	}
}

func TestURLEndsInV1(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.True(t, strings.HasSuffix(b.srv.URL(), "/v1"))
}

func TestTextAndRecording(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("hi there").WithUsage(7, 3))

	resp, err := b.client.CreateChatCompletion(context.Background(), chat("hello"))
	require.NoError(t, err)
	require.Equal(t, "hi there", resp.Choices[0].Message.Content)
	require.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
	require.Equal(t, 10, resp.Usage.TotalTokens)

	reqs := b.srv.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "Bearer sk-test", reqs[0].Authorization)
	require.Equal(t, "hello", reqs[0].LastUserMessage())
	require.Equal(t, "m", reqs[0].Chat.Model)
	require.Contains(t, string(reqs[0].Body), `"hello"`)
}

func TestDefaultUsageIsNonZero(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("x"))
	resp, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.NoError(t, err)
	require.Equal(t, llmtest.DefaultPromptTokens+llmtest.DefaultCompletionTokens, resp.Usage.TotalTokens)
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.ToolCalls(llmtest.Call("id1", "schedule_private_message", `{"a":1}`)))

	resp, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.NoError(t, err)
	calls := resp.Choices[0].Message.ToolCalls
	require.Len(t, calls, 1)
	require.Equal(t, "id1", calls[0].ID)
	require.Equal(t, "schedule_private_message", calls[0].Function.Name)
	require.JSONEq(t, `{"a":1}`, calls[0].Function.Arguments)
	require.Equal(t, openai.FinishReasonToolCalls, resp.Choices[0].FinishReason)
}

func TestStatusWithRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("1"))

	resp, err := http.Post(b.srv.URL()+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
}

func TestEmptyQueueFailsLoudly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusInternalServerError, apiErr.HTTPStatusCode)
	require.Equal(t, "llmtest: no scripted response", apiErr.Message)
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Malformed())
	_, err := b.client.CreateChatCompletion(context.Background(), chat("q"))
	require.Error(t, err)
}

func TestRespondEcho(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithResponder(llmtest.Echo))
	b.srv.Enqueue(llmtest.Text("scripted first"))

	resp, err := b.client.CreateChatCompletion(context.Background(), chat("one"))
	require.NoError(t, err)
	require.Equal(t, "scripted first", resp.Choices[0].Message.Content)

	resp, err = b.client.CreateChatCompletion(context.Background(), chat("two"))
	require.NoError(t, err)
	require.Equal(t, "two", resp.Choices[0].Message.Content)
	require.Zero(t, b.srv.Pending())
}

func TestDelayStopsWhenClientGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("late").WithDelay(time.Minute))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.client.CreateChatCompletion(ctx, chat("q"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestWaitRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Respond(llmtest.Echo)
	go func() {
		_, _ = b.client.CreateChatCompletion(context.Background(), chat("a"))
		_, _ = b.client.CreateChatCompletion(context.Background(), chat("b"))
	}()
	reqs := b.srv.WaitRequests(t, 2, 5*time.Second)
	require.Equal(t, "a", reqs[0].LastUserMessage())
	require.Equal(t, "b", reqs[1].LastUserMessage())
}

func TestModels(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithModel("tiny"))
	list, err := b.client.ListModels(context.Background())
	require.NoError(t, err)
	require.Len(t, list.Models, 1)
	require.Equal(t, "tiny", list.Models[0].ID)
}

// WithModels lists several models and, like OpenAI, refuses any other.
func TestWithModelsListsThemAndRefusesOthers(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithModels("gpt-4o-mini", "gpt-4o"))
	b.srv.Respond(llmtest.Echo)
	list, err := b.client.ListModels(context.Background())
	require.NoError(t, err)
	require.Len(t, list.Models, 2)
	require.Equal(t, "gpt-4o-mini", list.Models[0].ID)
	require.Equal(t, "gpt-4o", list.Models[1].ID)

	req := chat("hi")
	req.Model = "gpt-4o"
	resp, err := b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o", resp.Model, "the answer names the model asked for")

	req.Model = "gpt-4o-mni"
	_, err = b.client.CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.HTTPStatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
	require.Equal(t, "The model `gpt-4o-mni` does not exist or you do not have access to it.", apiErr.Message)
	require.Len(t, b.srv.Requests(), 2, "the refused request is recorded")
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("Hello, streaming world!").WithUsage(4, 6))

	req := chat("q")
	req.Stream = true
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := b.client.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer stream.Close()

	var text strings.Builder
	var deltas int
	var finish openai.FinishReason
	var usage *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				deltas++
				text.WriteString(c.Delta.Content)
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	require.Equal(t, "Hello, streaming world!", text.String())
	require.Greater(t, deltas, 1)
	require.Equal(t, openai.FinishReasonStop, finish)
	require.NotNil(t, usage)
	require.Equal(t, 10, usage.TotalTokens)
	require.True(t, b.srv.Requests()[0].Chat.Stream)
}

func TestStreamToolCalls(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.ToolCalls(
		llmtest.Call("c1", "list_facts", `{}`),
		llmtest.Call("c2", "schedule_private_message", `{"send_at":"2030-01-01T00:00:00Z","message_text":"hey"}`),
	))

	req := chat("q")
	req.Stream = true
	stream, err := b.client.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer stream.Close()

	type call struct{ id, name, args string }
	calls := map[int]*call{}
	var finish openai.FinishReason
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, c := range chunk.Choices {
			for _, tc := range c.Delta.ToolCalls {
				require.NotNil(t, tc.Index)
				cc := calls[*tc.Index]
				if cc == nil {
					cc = &call{}
					calls[*tc.Index] = cc
				}
				cc.id += tc.ID
				cc.name += tc.Function.Name
				cc.args += tc.Function.Arguments
			}
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	require.Len(t, calls, 2)
	require.Equal(t, call{"c1", "list_facts", `{}`}, *calls[0])
	require.Equal(t, "c2", calls[1].id)
	var args map[string]any
	require.NoError(t, json.Unmarshal([]byte(calls[1].args), &args))
	require.Equal(t, "hey", args["message_text"])
	require.Equal(t, openai.FinishReasonToolCalls, finish)
}

func TestStreamStatusError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusServiceUnavailable))
	req := chat("q")
	req.Stream = true
	_, err := b.client.CreateChatCompletionStream(context.Background(), req)
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusServiceUnavailable, apiErr.HTTPStatusCode)
}

func TestHoldAnswersWhenReleased(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("released").WithHold(gate))
	done := make(chan string, 1)
	go func() {
		resp, err := b.client.CreateChatCompletion(context.Background(), chat("hi"))
		if err != nil {
			done <- err.Error()
			return
		}
		done <- resp.Choices[0].Message.Content
	}()
	b.srv.WaitRequests(t, 1, 5*time.Second)
	select {
	case got := <-done:
		t.Fatalf("answered before the gate opened: %q", got)
	default:
	}
	close(gate)
	select {
	case got := <-done:
		require.Equal(t, "released", got)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer after the gate opened")
	}
}
