package llm_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

func TestRetryAfterSecondsIsHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("7"), llmtest.Text("ok"))

	res, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "ok", res.Content)
	require.Equal(t, []time.Duration{7 * time.Second}, b.sleeps.all())
	reqs := b.srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, reqs[0].Body, reqs[1].Body, "the retry replays the same body")
	require.Equal(t, "Bearer "+apiKey, reqs[1].Authorization)

	logs := b.logs.String()
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "status=429")
	require.Contains(t, logs, "delay=7s")
	require.NotContains(t, logs, apiKey)
}

func TestRetryAfterHTTPDateIsHonoured(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	b := setup(t, func(c *llm.Config) { c.Now = func() time.Time { return now } })
	b.srv.Enqueue(
		llmtest.Status(http.StatusServiceUnavailable).WithRetryAfter(now.Add(30*time.Second).Format(http.TimeFormat)),
		llmtest.Text("ok"),
	)
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{30 * time.Second}, b.sleeps.all())
}

func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("86400"), llmtest.Text("ok"))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{llm.DefaultMaxRetryDelay}, b.sleeps.all())
}

func TestRetryAfterRealTime(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.Sleep = nil })
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("1"), llmtest.Text("ok"))

	start := time.Now()
	res, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "ok", res.Content)
	require.GreaterOrEqual(t, time.Since(start), time.Second)
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for range 4 {
		b.srv.Enqueue(llmtest.Status(http.StatusInternalServerError).WithErrorMessage("the model is overloaded"))
	}

	_, err := b.client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Equal(t, http.StatusInternalServerError, llmErr.StatusCode)
	require.True(t, llmErr.Retryable)
	require.Equal(t, "llm: 500 Internal Server Error after 4 attempts: the model is overloaded", err.Error())
	require.Len(t, b.srv.Requests(), 4)

	delays := b.sleeps.all()
	require.Len(t, delays, 3)
	for i, d := range delays {
		// Exponential backoff with jitter: between half and all of 500ms·2^i.
		full := llm.DefaultRetryBase << i
		require.GreaterOrEqual(t, d, full/2, "retry %d", i)
		require.LessOrEqual(t, d, full, "retry %d", i)
	}
}

func TestClientErrorsAreNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Status(http.StatusBadRequest).WithErrorMessage("messages must not be empty"))

	_, err := b.client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Equal(t, http.StatusBadRequest, llmErr.StatusCode)
	require.False(t, llmErr.Retryable)
	require.Equal(t, "llm: 400 Bad Request: messages must not be empty", err.Error())
	require.Len(t, b.srv.Requests(), 1)
	require.Empty(t, b.sleeps.all())
}

func TestNoRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxRetries = llm.NoRetries })
	b.srv.Enqueue(llmtest.Status(http.StatusServiceUnavailable))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.ErrorContains(t, err, "llm: 503 Service Unavailable: ")
	require.Len(t, b.srv.Requests(), 1)
}

func TestConnectionErrorsAreRetried(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	sleeps := &sleepRecorder{}
	logs := &syncBuffer{}
	client, err := llm.New(llm.Config{
		BaseURL: dead.URL + "/v1", APIKey: apiKey, Model: "m",
		Sleep: sleeps.sleep, MaxRetries: 2, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	require.NoError(t, err)

	_, err = client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Zero(t, llmErr.StatusCode)
	require.True(t, llmErr.Retryable)
	require.Contains(t, err.Error(), "llm: request failed after 3 attempts")
	require.NotContains(t, err.Error(), apiKey)
	require.Len(t, sleeps.all(), 2)
	require.Contains(t, logs.String(), "retrying after connection error")
	require.NotContains(t, logs.String(), apiKey)
}

func TestSlowAnswerTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.Timeout = 100 * time.Millisecond })
	b.srv.Enqueue(llmtest.Text("too late").WithDelay(time.Minute))

	start := time.Now()
	_, err := b.client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.True(t, llmErr.Timeout)
	require.Equal(t, "llm: request timed out (timeout 100ms)", err.Error())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Len(t, b.srv.Requests(), 1, "a timed-out attempt is not retried")
}

func TestTimeoutDoesNotCutOffASuccessfulBody(t *testing.T) {
	t.Parallel()
	// The attempt's context must live until go-openai has read the body;
	// a large answer makes a premature cancel visible.
	b := setup(t, func(c *llm.Config) { c.Timeout = 5 * time.Second })
	long := strings.Repeat("All work and no play. ", 50_000)
	b.srv.Enqueue(llmtest.Text(long))
	res, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, long, res.Content)
}

func TestCancelStopsPromptly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("never").WithDelay(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	done := make(chan error, 1)
	go func() {
		_, err := b.client.Run(ctx, userSays("hi"))
		done <- err
	}()
	b.srv.WaitRequests(t, 1, 5*time.Second)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		require.Contains(t, err.Error(), "llm: request canceled")
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestCancelDuringRetryWait(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.Sleep = nil })
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("60"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	done := make(chan error, 1)
	go func() {
		_, err := b.client.Run(ctx, userSays("hi"))
		done <- err
	}()
	b.srv.WaitRequests(t, 1, 5*time.Second)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	require.Len(t, b.srv.Requests(), 1)
}

func TestAPIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(
		llmtest.Status(http.StatusUnauthorized).WithErrorMessage("Incorrect API key provided: "+apiKey),
		llmtest.Raw(http.StatusBadGateway, "upstream said "+apiKey),
		llmtest.Raw(http.StatusBadGateway, "upstream said "+apiKey),
		llmtest.Raw(http.StatusBadGateway, "upstream said "+apiKey),
		llmtest.Raw(http.StatusBadGateway, "upstream said "+apiKey),
		llmtest.Raw(http.StatusOK, "not json "+apiKey),
	)
	for _, want := range []string{
		"llm: 401 Unauthorized: Incorrect API key provided: [redacted]",
		"llm: 502 Bad Gateway after 4 attempts: upstream said [redacted]",
		"llm: malformed response: ",
	} {
		_, err := b.client.Run(context.Background(), userSays("hi"))
		require.Error(t, err)
		require.NotContains(t, err.Error(), apiKey)
		require.Contains(t, err.Error(), want)
		for e := err; e != nil; e = errors.Unwrap(e) {
			require.NotContains(t, e.Error(), apiKey)
		}
	}
	require.NotContains(t, b.logs.String(), apiKey)
}
