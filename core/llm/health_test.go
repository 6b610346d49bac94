package llm_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// clock is a settable Config.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

const authHint = "check llm.api_key (OPENAI_API_KEY)"

func TestHealthThroughAuthFailureAndRecovery(t *testing.T) {
	t.Parallel()
	clk := newClock()
	srv := llmtest.NewServer(t, llmtest.WithAPIKey("sk-the-right-key-9876"))
	client, err := llm.New(llm.Config{
		BaseURL: srv.URL(), APIKey: apiKey, Model: "m", Now: clk.Now, AuthHint: authHint,
		Logger: newLogger(&syncBuffer{}),
	})
	require.NoError(t, err)
	require.Equal(t, llm.Health{State: llm.HealthUnknown}, client.Health())

	_, err = client.Run(context.Background(), userSays("hi"))
	var llmErr *llm.Error
	require.ErrorAs(t, err, &llmErr)
	require.Equal(t, http.StatusUnauthorized, llmErr.StatusCode)
	require.True(t, strings.HasSuffix(err.Error(), authHint), err.Error())
	require.Contains(t, err.Error(), "Incorrect API key provided: sk-...cdef")
	require.NotContains(t, err.Error(), apiKey)
	failedAt := clk.Now()
	h := client.Health()
	require.Equal(t, llm.HealthAuth, h.State)
	require.Equal(t, err.Error(), h.Err)
	require.Equal(t, failedAt, h.Since)
	require.Len(t, srv.Requests(), 1, "a 401 is not retried")

	clk.advance(time.Minute)
	_, err = client.Complete(context.Background(), userSays("hi"))
	require.Error(t, err)
	require.Equal(t, failedAt, client.Health().Since, "still failing: the state began earlier")

	srv.SetAPIKey(apiKey)
	srv.Enqueue(llmtest.Text("welcome back"))
	okAt := clk.advance(time.Minute)
	res, err := client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, "welcome back", res.Content)
	require.Equal(t, llm.Health{State: llm.HealthOK, Since: okAt}, client.Health())

	srv.Enqueue(llmtest.Text("still here"))
	clk.advance(time.Minute)
	_, err = client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	require.Equal(t, okAt, client.Health().Since, "ok stays ok since it began")
}

func TestAuthHintEndsForbiddenErrorsOnly(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.AuthHint = authHint })
	b.srv.Enqueue(
		llmtest.Status(http.StatusForbidden).WithErrorMessage("Project does not have access to model m"),
		llmtest.Status(http.StatusBadRequest).WithErrorMessage("bad request"),
	)
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.Equal(t, "llm: 403 Forbidden: Project does not have access to model m; "+authHint, err.Error())
	require.Equal(t, llm.HealthAuth, b.client.Health().State)

	_, err = b.client.Run(context.Background(), userSays("hi"))
	require.Equal(t, "llm: 400 Bad Request: bad request", err.Error())
	require.Equal(t, llm.HealthServerError, b.client.Health().State)
}

func TestAuthErrorNeverShowsTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.AuthHint = "key " + apiKey + " is wrong" })
	b.srv.Enqueue(llmtest.Status(http.StatusUnauthorized).WithErrorMessage("Incorrect API key provided: " + apiKey))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.Error(t, err)
	for e := err; e != nil; e = errors.Unwrap(e) {
		require.NotContains(t, e.Error(), apiKey)
	}
	require.NotContains(t, b.client.Health().Err, apiKey)
	require.NotContains(t, b.logs.String(), apiKey)
}

func TestHealthStates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script []llmtest.Response
		want   string
	}{
		{"rate limited after retries", repeat(llmtest.Status(http.StatusTooManyRequests), 4), llm.HealthRateLimited},
		{"server error", repeat(llmtest.Status(http.StatusBadGateway), 4), llm.HealthServerError},
		{"other 4xx", []llmtest.Response{llmtest.Status(http.StatusNotFound)}, llm.HealthServerError},
		{"malformed", []llmtest.Response{llmtest.Malformed()}, llm.HealthServerError},
		{"empty body", []llmtest.Response{llmtest.Raw(http.StatusOK, "")}, llm.HealthServerError},
		{"no choices", []llmtest.Response{llmtest.Raw(http.StatusOK, `{"id":"x","choices":[]}`)}, llm.HealthServerError},
		{"unauthorized", []llmtest.Response{llmtest.Status(http.StatusUnauthorized)}, llm.HealthAuth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.srv.Enqueue(tc.script...)
			_, err := b.client.Run(context.Background(), userSays("hi"))
			require.Error(t, err)
			h := b.client.Health()
			require.Equal(t, tc.want, h.State)
			require.Equal(t, err.Error(), h.Err)
			require.False(t, h.Since.IsZero())
			require.Zero(t, b.srv.Pending())

			b.srv.Enqueue(llmtest.Text("ok"))
			_, err = b.client.Complete(context.Background(), userSays("hi"))
			require.NoError(t, err)
			require.Equal(t, llm.HealthOK, b.client.Health().State)
			require.Empty(t, b.client.Health().Err)
		})
	}
}

func repeat(r llmtest.Response, n int) []llmtest.Response {
	out := make([]llmtest.Response, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func TestHealthUnreachable(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	client, err := llm.New(llm.Config{
		BaseURL: dead.URL + "/v1", Model: "m", MaxRetries: llm.NoRetries, Logger: newLogger(&syncBuffer{}),
	})
	require.NoError(t, err)
	_, err = client.Run(context.Background(), userSays("hi"))
	require.Error(t, err)
	require.Equal(t, llm.HealthUnreachable, client.Health().State)
	require.Contains(t, client.Health().Err, "llm: request failed")
}

func TestHealthTimeoutIsUnreachable(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.Timeout = 50 * time.Millisecond })
	b.srv.Enqueue(llmtest.Text("late").WithDelay(time.Minute))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.Error(t, err)
	require.Equal(t, llm.HealthUnreachable, b.client.Health().State)
}

func TestHealthIgnoresCallsTheCallerCancelled(t *testing.T) {
	t.Parallel()
	clk := newClock()
	b := setup(t, func(c *llm.Config) { c.Now = clk.Now })
	b.srv.Enqueue(llmtest.Text("ok"))
	_, err := b.client.Run(context.Background(), userSays("hi"))
	require.NoError(t, err)
	before := b.client.Health()
	require.Equal(t, llm.HealthOK, before.State)

	gate := make(chan struct{})
	defer close(gate)
	b.srv.Enqueue(llmtest.Text("never").WithHold(gate))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.client.Run(ctx, userSays("hi"))
		done <- err
	}()
	b.srv.WaitRequests(t, 2, 5*time.Second)
	clk.advance(time.Hour)
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	require.Equal(t, before, b.client.Health())
}

func TestHealthIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Respond(func(r llmtest.Request) llmtest.Response {
		if strings.HasSuffix(r.LastUserMessage(), "fail") {
			return llmtest.Status(http.StatusNotFound)
		}
		return llmtest.Text("ok")
	})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := "ok"
			if i%2 == 0 {
				text = "fail"
			}
			_, _ = b.client.Run(context.Background(), userSays(text))
			_ = b.client.Health()
		}()
	}
	wg.Wait()
	require.Contains(t, []string{llm.HealthOK, llm.HealthServerError}, b.client.Health().State)
}
