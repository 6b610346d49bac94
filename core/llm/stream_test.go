package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// streamedRun runs req with OnPartial recording every text it is given.
func streamedRun(ctx context.Context, c *llm.Client, req llm.Request) (llm.Result, []string, error) {
	var partials []string
	req.OnPartial = func(text string) { partials = append(partials, text) }
	res, err := c.Run(ctx, req)
	return res, partials, err
}

// requireGrowing checks that texts are growing prefixes of whole, each
// longer than the one before.
func requireGrowing(t *testing.T, texts []string, whole string) {
	t.Helper()
	require.NotEmpty(t, texts)
	for i, s := range texts {
		require.True(t, strings.HasPrefix(whole, s), "partial %d %q is not a prefix of %q", i, s, whole)
		if i > 0 {
			require.Greater(t, len(s), len(texts[i-1]), "partial %d does not grow", i)
		}
	}
	require.Equal(t, whole, texts[len(texts)-1])
}

func TestStreamedRunEqualsTheWholeAnswer(t *testing.T) {
	t.Parallel()
	cases := map[string]llmtest.Response{
		"text with reasoning": llmtest.Text("<think>raw</think>The answer is 42, as you know.").
			WithReasoning("Thinking it over.").WithUsage(31, 12).WithWordDeltas(),
		"refusal":       llmtest.Refusal("I can't help with that.").WithUsage(9, 4),
		"filtered":      llmtest.Text("").WithFinishReason("content_filter"),
		"one delta":     llmtest.Text("Sure.").WithDeltas(1),
		"unicode words": llmtest.Text("Ça va très bien, merci 🙂 et toi ?").WithWordDeltas(),
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(answer, answer)
			whole, err := b.client.Run(context.Background(), userSays("hi"))
			require.NoError(t, err)
			streamed, partials, err := streamedRun(context.Background(), b.client, userSays("hi"))
			require.NoError(t, err)
			require.Equal(t, whole, streamed)
			require.Equal(t, llmtest.DefaultModel, streamed.Model, "the model the server named")
			if whole.Content != "" {
				requireGrowing(t, partials, whole.Content)
			} else {
				require.Empty(t, partials)
			}

			reqs := b.srv.Requests()
			require.False(t, reqs[0].Chat.Stream)
			require.True(t, reqs[1].Chat.Stream)
			require.NotNil(t, reqs[1].Chat.StreamOptions)
			require.True(t, reqs[1].Chat.StreamOptions.IncludeUsage, "usage is asked for")
			require.Equal(t, reqs[0].Messages(), reqs[1].Messages())
		})
	}
}

func TestStreamedPartialsNeverCarryReasoningContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const answer = "<think>tags stay for the caller</think>Paris is the capital of France."
	b.srv.Enqueue(llmtest.Text(answer).WithReasoning("SECRET chain of thought").WithWordDeltas())
	res, partials, err := streamedRun(context.Background(), b.client, userSays("capital?"))
	require.NoError(t, err)
	require.Equal(t, "SECRET chain of thought", res.Reasoning)
	require.Len(t, partials, len(strings.Fields(answer)), "one partial per delta")
	requireGrowing(t, partials, answer)
	for _, p := range partials {
		require.NotContains(t, p, "SECRET")
	}
}

func TestStreamedToolRoundsBeginWithAnEmptyText(t *testing.T) {
	t.Parallel()
	script := []llmtest.Response{
		llmtest.ToolCalls(
			llmtest.Call("call_1", "add", `{"a":2,"b":3}`),
			llmtest.Call("call_2", "add", `{"a":40,"b":2}`),
		).WithText("Let me add.").WithReasoning("two sums").WithUsage(10, 5),
		llmtest.ToolCalls(llmtest.Call("call_3", "add", `{"a":1,"b":1}`)).WithUsage(12, 3),
		llmtest.Text("5, 42 and 2.").WithUsage(20, 6).WithWordDeltas(),
	}
	run := func(t *testing.T, stream bool) (llm.Result, []string, *addTool, llmtest.Request) {
		b := setup(t)
		b.srv.Enqueue(script...)
		add := &addTool{}
		req := userSays("sums?")
		req.Tools = []llm.Tool{add.tool()}
		var res llm.Result
		var partials []string
		var err error
		if stream {
			res, partials, err = streamedRun(context.Background(), b.client, req)
		} else {
			res, err = b.client.Run(context.Background(), req)
		}
		require.NoError(t, err)
		return res, partials, add, b.srv.Requests()[2]
	}
	whole, _, _, wholeLast := run(t, false)
	res, partials, add, last := run(t, true)
	require.Equal(t, whole, res)
	require.Equal(t, []map[string]int{{"a": 2, "b": 3}, {"a": 40, "b": 2}, {"a": 1, "b": 1}}, add.calls,
		"arguments that arrived in pieces are whole")
	require.Equal(t, 2, res.Rounds)
	require.Equal(t, llm.Usage{PromptTokens: 42, CompletionTokens: 14, TotalTokens: 56}, res.Usage)
	require.Equal(t, []string{"Let ", "Let me a", "Let me add.", "", "", "5, ", "5, 42 ", "5, 42 and ", "5, 42 and 2."}, partials,
		"the first round's text, then each later completion begins empty")
	require.Equal(t, wholeLast.Messages(), last.Messages(), "the same messages go back to the model")
	require.True(t, last.Chat.Stream)
	require.Equal(t, []string{"add"}, last.ToolNames(), "the tools go in the spliced body")
}

func TestABrokenStreamIsAskedAgain(t *testing.T) {
	t.Parallel()
	const answer = "one two three four five"
	cases := map[string]llmtest.Response{
		"connection cut":       llmtest.Text(answer).WithWordDeltas().WithStreamCut(2),
		"ended early":          llmtest.Text(answer).WithWordDeltas().WithStreamEndEarly(3),
		"error event":          llmtest.Text(answer).WithWordDeltas().WithStreamError(2, "the model crashed"),
		"malformed chunk":      llmtest.Malformed(),
		"cut before any delta": llmtest.Text(answer).WithStreamCut(0),
	}
	for name, broken := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(broken, llmtest.Text(answer).WithWordDeltas().WithUsage(7, 5))
			res, partials, err := streamedRun(context.Background(), b.client, userSays("count"))
			require.NoError(t, err)
			require.Equal(t, answer, res.Content)
			require.Equal(t, "stop", res.FinishReason)
			require.Equal(t, llm.Usage{PromptTokens: 7, CompletionTokens: 5, TotalTokens: 12}, res.Usage,
				"the broken attempt's usage is not counted")
			require.Len(t, b.srv.Requests(), 2)
			require.Len(t, b.sleeps.all(), 1, "one backoff before asking again")

			restart := indexOf(partials, "")
			require.GreaterOrEqual(t, restart, 0, "the retry begins with an empty text: %q", partials)
			for _, p := range partials[:restart] {
				require.True(t, strings.HasPrefix(answer, p), "before the break: %q", p)
			}
			requireGrowing(t, partials[restart+1:], answer)
			require.Contains(t, b.logs.String(), "stream broke")
			require.Equal(t, llm.HealthOK, b.client.Health().State)
		})
	}
}

func indexOf(texts []string, s string) int {
	for i, t := range texts {
		if t == s {
			return i
		}
	}
	return -1
}

func TestABrokenStreamFailsWhenRetriesRunOut(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxRetries = 2 })
	for range 3 {
		b.srv.Enqueue(llmtest.Text("half of an answer").WithWordDeltas().WithStreamCut(2))
	}
	b.srv.Enqueue(llmtest.Text("never asked for"))
	res, partials, err := streamedRun(context.Background(), b.client, userSays("hi"))
	require.Error(t, err)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.True(t, e.Retryable)
	require.Contains(t, e.Message, "stream broke after 3 attempts")
	require.Empty(t, res.Content, "never half an answer presented as whole")
	require.Empty(t, res.Appended)
	require.Len(t, b.srv.Requests(), 3)
	require.Len(t, b.sleeps.all(), 2)
	require.Equal(t, []string{"half ", "half of ", "", "half ", "half of ", "", "half ", "half of "}, partials)
	require.Equal(t, llm.HealthUnreachable, b.client.Health().State)
}

func TestStatusRetriesAndStreamRetriesShareOneBudget(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxRetries = 2 })
	b.srv.Enqueue(
		llmtest.Status(http.StatusInternalServerError),
		llmtest.Text("broken").WithStreamError(1, "overloaded"),
		llmtest.Text("broken again").WithStreamError(1, "overloaded"),
		llmtest.Text("never asked for"),
	)
	_, _, err := streamedRun(context.Background(), b.client, userSays("hi"))
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Message, "after 3 attempts")
	require.Contains(t, e.Message, "overloaded")
	require.Len(t, b.srv.Requests(), 3, "three attempts in all, as MaxRetries 2 allows")
	require.Equal(t, llm.HealthServerError, b.client.Health().State)
}

func TestA429BeforeTheStreamIsRetriedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("7"), llmtest.Text("ok then").WithWordDeltas())
	res, partials, err := streamedRun(context.Background(), b.client, userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "ok then", res.Content)
	require.Equal(t, []time.Duration{7 * time.Second}, b.sleeps.all())
	require.Equal(t, []string{"ok ", "ok then"}, partials, "nothing had streamed, so nothing restarts")
	reqs := b.srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, reqs[0].Body, reqs[1].Body, "the retry replays the same body")
}

func TestAnErrorStatusBeforeTheStreamIsTodays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusBadRequest).WithErrorMessage("context too long"))
	_, partials, err := streamedRun(context.Background(), b.client, userSays("hi"))
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusBadRequest, e.StatusCode)
	require.Contains(t, e.Message, "context too long")
	require.False(t, e.Retryable)
	require.Empty(t, partials)
	require.Len(t, b.srv.Requests(), 1)
}

func TestAStreamHoldsItsConcurrencySlotToTheEnd(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxConcurrency = 1 })
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("slow words here").WithWordDeltas().WithDeltaGate(gate), llmtest.Text("second"))

	seen := make(chan string, 8)
	first := make(chan error, 1)
	go func() {
		req := userSays("first")
		req.OnPartial = func(s string) { seen <- s }
		_, err := b.client.Run(context.Background(), req)
		first <- err
	}()
	gate <- struct{}{}
	require.Equal(t, "slow ", receive(t, seen))

	second := make(chan error, 1)
	go func() {
		_, err := b.client.Run(context.Background(), userSays("second"))
		second <- err
	}()
	require.Eventually(t, func() bool { return b.client.Waiting() == 1 }, waitLimit, time.Millisecond)
	require.Equal(t, 1, b.client.InFlight())
	require.Len(t, b.srv.Requests(), 1, "the second waits while the first streams")

	gate <- struct{}{}
	require.Equal(t, "slow words ", receive(t, seen))
	require.Len(t, b.srv.Requests(), 1)
	close(gate)
	require.NoError(t, finished(t, first))
	require.NoError(t, finished(t, second))
	require.Len(t, b.srv.Requests(), 2)
	require.Zero(t, b.client.InFlight())
}

func receive(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(waitLimit):
		t.Fatal("nothing arrived")
		return ""
	}
}

func TestACancelledStreamEndsTheRunAndIsNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("never finished answer").WithWordDeltas().WithDeltaGate(gate))
	ctx, cancel := context.WithCancel(context.Background())
	var after atomic.Bool
	var calls atomic.Int32
	req := userSays("hi")
	req.OnPartial = func(string) {
		if after.Load() {
			t.Error("OnPartial after Run returned")
		}
		calls.Add(1)
		cancel()
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.client.Run(ctx, req)
		after.Store(true)
		done <- err
	}()
	gate <- struct{}{}
	err := finished(t, done)
	require.ErrorIs(t, err, context.Canceled)
	require.EqualValues(t, 1, calls.Load())
	require.Len(t, b.srv.Requests(), 1)
	require.Empty(t, b.sleeps.all())
}

func TestAStreamThatEndsWithDoneButNoFinishReasonIsWhole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// llama.cpp-like: no finish_reason, no usage, calls without an index.
	b.srv.Enqueue(llmtest.Raw(http.StatusOK, strings.Join([]string{
		`data: {"id":"x","model":"local","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"}}]}`,
		`data: {"id":"x","choices":[{"index":0,"delta":{"content":" there"}}]}`,
		`data: [DONE]`, ``, ``,
	}, "\n\n")))
	res, partials, err := streamedRun(context.Background(), b.client, userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "Hi there", res.Content)
	require.Equal(t, "local", res.Model)
	require.Equal(t, []string{"Hi", "Hi there"}, partials)
	require.Zero(t, res.Usage, "no usage sent, none counted, as without streaming")
}

func TestToolCallDeltasWithoutAnIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Raw(http.StatusOK, strings.Join([]string{
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":1,"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"\"b\":2}"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","type":"function","function":{"name":"add","arguments":"{\"a\":3,\"b\":4}"}}]},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`, ``,
	}, "\n\n")), llmtest.Text("3 and 7"))
	add := &addTool{}
	req := userSays("sums")
	req.Tools = []llm.Tool{add.tool()}
	res, _, err := streamedRun(context.Background(), b.client, req)
	require.NoError(t, err)
	require.Equal(t, "3 and 7", res.Content)
	require.Equal(t, []map[string]int{{"a": 1, "b": 2}, {"a": 3, "b": 4}}, add.calls)
	require.Equal(t, "c2", res.ToolCalls[1].Call.ID)
}

func TestOnFinishAndHealthAreRecordedForStreams(t *testing.T) {
	t.Parallel()
	var reasons []string
	b := setup(t, func(c *llm.Config) { c.OnFinish = func(_, r string) { reasons = append(reasons, r) } })
	b.srv.Enqueue(llmtest.Text("cut short by max tokens").WithFinishReason("length"))
	_, _, err := streamedRun(context.Background(), b.client, userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, []string{"length"}, reasons)
	require.Equal(t, llm.HealthOK, b.client.Health().State)
	require.False(t, errors.Is(err, context.Canceled))
}

func TestAStreamStalledPastTheTimeoutIsNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.Timeout = 100 * time.Millisecond })
	gate := make(chan struct{}) // never released after the first delta
	b.srv.Enqueue(llmtest.Text("stalls after this").WithWordDeltas().WithDeltaGate(gate), llmtest.Text("never asked for"))
	go func() { gate <- struct{}{} }()
	res, partials, err := streamedRun(context.Background(), b.client, userSays("hi"))
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.True(t, e.Timeout, "a per-attempt timeout, as without streaming: %v", err)
	require.Empty(t, res.Content)
	require.Equal(t, []string{"stalls "}, partials)
	require.Len(t, b.srv.Requests(), 1)
	require.Equal(t, llm.HealthUnreachable, b.client.Health().State)
}
