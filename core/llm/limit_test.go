package llm_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// waitLimit bounds every wait on the fakes: generous, since nothing here
// waits on the wall clock when it works.
const waitLimit = 10 * time.Second

var limitT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// virtualClock is Config.Now and Config.Sleep on a time that moves only by
// sleeping: each sleep is recorded and moves the clock by its length, so a
// test sees exactly when each request went.
type virtualClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newVirtualClock() *virtualClock { return &virtualClock{now: limitT0} }

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *virtualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *virtualClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// heldSleeps stands in for Config.Sleep: each call is reported on calls
// and returns only once the test closes release (or ctx ends).
type heldSleeps struct {
	calls   chan time.Duration
	release chan struct{}
}

func newHeldSleeps() *heldSleeps {
	return &heldSleeps{calls: make(chan time.Duration, 16), release: make(chan struct{})}
}

func (h *heldSleeps) sleep(ctx context.Context, d time.Duration) error {
	h.calls <- d
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// next is the length of the next sleep to begin.
func (h *heldSleeps) next(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-h.calls:
		return d
	case <-time.After(waitLimit):
		t.Fatal("no request began to wait")
		return 0
	}
}

// countingTransport counts the HTTP requests in flight below the client's
// limits, from sending until the body is closed, and the most at once.
type countingTransport struct {
	base     http.RoundTripper
	inFlight atomic.Int64
	most     atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	n := c.inFlight.Add(1)
	for {
		m := c.most.Load()
		if n <= m || c.most.CompareAndSwap(m, n) {
			break
		}
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		c.inFlight.Add(-1)
		return nil, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, c: c}
	return resp, nil
}

type countedBody struct {
	io.ReadCloser
	c    *countingTransport
	once sync.Once
}

func (b *countedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(func() { b.c.inFlight.Add(-1) })
	return err
}

// complete runs Complete in the background.
func complete(ctx context.Context, c *llm.Client, text string) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, userSays(text))
		done <- err
	}()
	return done
}

func finished(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLimit):
		t.Fatal("the request did not finish")
		return nil
	}
}

func TestMaxConcurrencyBoundsRequestsInFlight(t *testing.T) {
	t.Parallel()
	counter := &countingTransport{base: http.DefaultTransport}
	b := setup(t, func(c *llm.Config) {
		c.MaxConcurrency = 2
		c.HTTPClient = &http.Client{Transport: counter}
	})
	// Each send on release lets one held answer go.
	release := make(chan struct{})
	b.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok").WithHold(release) })

	var dones []<-chan error
	for range 5 {
		dones = append(dones, complete(context.Background(), b.client, "hi"))
	}
	b.srv.WaitRequests(t, 2, waitLimit)
	for k := range 4 {
		waiting := 3 - k
		require.Eventually(t, func() bool { return b.client.Waiting() == waiting }, waitLimit, time.Millisecond,
			"step %d: %d waiting, want %d", k, b.client.Waiting(), waiting)
		require.Len(t, b.srv.Requests(), 5-waiting, "step %d: only requests holding a slot are sent", k)
		require.Equal(t, 2, b.client.InFlight())
		release <- struct{}{}
		if k < 3 {
			b.srv.WaitRequests(t, 3+k, waitLimit)
		}
	}
	release <- struct{}{}
	for _, done := range dones {
		require.NoError(t, finished(t, done))
	}
	require.EqualValues(t, 2, counter.most.Load(), "at most two HTTP requests were in flight at once")
	require.Zero(t, b.client.InFlight())
	require.Zero(t, b.client.Waiting())
}

func TestARetryWaitGivesUpItsSlot(t *testing.T) {
	t.Parallel()
	sleeps := newHeldSleeps()
	b := setup(t, func(c *llm.Config) {
		c.MaxConcurrency = 1
		c.Sleep = sleeps.sleep
	})
	b.srv.Enqueue(llmtest.Status(http.StatusServiceUnavailable), llmtest.Text("second"), llmtest.Text("first"))

	first := complete(context.Background(), b.client, "first")
	sleeps.next(t) // the first waits to retry its 503
	require.Zero(t, b.client.InFlight())
	second := complete(context.Background(), b.client, "second")
	require.NoError(t, finished(t, second), "the slot is free while the first waits to retry")
	close(sleeps.release)
	require.NoError(t, finished(t, first))
	require.Len(t, b.srv.Requests(), 3)
}

func TestWaitingForASlotEndsWithTheContext(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) { c.MaxConcurrency = 1 })
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("held").WithHold(gate))

	held := complete(context.Background(), b.client, "first")
	b.srv.WaitRequests(t, 1, waitLimit)
	ctx, cancel := context.WithCancel(context.Background())
	waiting := complete(ctx, b.client, "second")
	require.Eventually(t, func() bool { return b.client.Waiting() == 1 }, waitLimit, time.Millisecond)
	cancel()
	err := finished(t, waiting)
	require.ErrorIs(t, err, context.Canceled)
	require.Contains(t, err.Error(), "llm: request canceled")
	require.Zero(t, b.client.Waiting())
	close(gate)
	require.NoError(t, finished(t, held))
	require.Len(t, b.srv.Requests(), 1, "the cancelled request was never sent")
}

func TestRequestsPerMinuteAreSpreadEvenly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rpm  int
		want []time.Duration // the waits of six requests sent back to back
	}{
		// 120 a minute is 2 a second: a burst of 2, then one every 500ms.
		{120, []time.Duration{500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond}},
		// Under 60 a minute the burst is one request.
		{30, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}},
		// 600 a minute: ten go at once.
		{600, nil},
	} {
		clock := newVirtualClock()
		b := setup(t, func(c *llm.Config) {
			c.RequestsPerMinute = tc.rpm
			c.Now, c.Sleep = clock.Now, clock.Sleep
		})
		b.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
		for range 6 {
			_, err := b.client.Complete(context.Background(), userSays("hi"))
			require.NoError(t, err)
		}
		require.Equal(t, tc.want, clock.Sleeps(), "rpm %d", tc.rpm)
	}
}

func TestEveryAttemptCountsAgainstRequestsPerMinute(t *testing.T) {
	t.Parallel()
	clock := newVirtualClock()
	b := setup(t, func(c *llm.Config) {
		c.RequestsPerMinute = 60
		c.Now, c.Sleep = clock.Now, clock.Sleep
	})
	b.srv.Enqueue(llmtest.Status(http.StatusBadGateway), llmtest.Text("ok"))

	_, err := b.client.Complete(context.Background(), userSays("hi"))
	require.NoError(t, err)
	sleeps := clock.Sleeps()
	require.Len(t, sleeps, 2, "the retry's backoff, then its wait for the budget")
	require.Less(t, sleeps[0], time.Second)
	require.Equal(t, time.Second, sleeps[0]+sleeps[1], "the retry goes a second after the first attempt")
}

func TestTokensPerMinuteAreCorrectedByUsage(t *testing.T) {
	t.Parallel()
	// Each request is estimated at its max_tokens (600) and a few more for
	// the prompt, of a budget of 1000.
	setupTPM := func(clock *virtualClock) testBundle {
		return setup(t, func(c *llm.Config) {
			c.TokensPerMinute = 1000
			c.MaxTokens = 600
			c.Now, c.Sleep = clock.Now, clock.Sleep
		})
	}

	t.Run("overestimate given back", func(t *testing.T) {
		t.Parallel()
		clock := newVirtualClock()
		b := setupTPM(clock)
		b.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok").WithUsage(10, 5) })
		for range 3 {
			_, err := b.client.Complete(context.Background(), userSays("hi"))
			require.NoError(t, err)
		}
		// Uncorrected, the second would wait: 600+ twice is over 1000.
		require.Empty(t, clock.Sleeps(), "each request used 15 tokens; the rest of its estimate was given back")
	})

	t.Run("underestimate taken", func(t *testing.T) {
		t.Parallel()
		clock := newVirtualClock()
		b := setupTPM(clock)
		b.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok").WithUsage(1500, 100) })
		for range 2 {
			_, err := b.client.Complete(context.Background(), userSays("hi"))
			require.NoError(t, err)
		}
		// The first left the budget 600 in debt (1000-1600); the second,
		// estimated e (600 to 640), waits for (e+600) tokens at 1000 a
		// minute: 72s to 74.4s. Uncorrected it would have waited ~13s.
		sleeps := clock.Sleeps()
		require.Len(t, sleeps, 1)
		require.GreaterOrEqual(t, sleeps[0], 72*time.Second)
		require.LessOrEqual(t, sleeps[0], 74400*time.Millisecond)
	})
}

func TestARequestLargerThanTheTokenBudgetWaitsForAllOfIt(t *testing.T) {
	t.Parallel()
	clock := newVirtualClock()
	b := setup(t, func(c *llm.Config) {
		c.TokensPerMinute = 100
		c.MaxTokens = 600 // every request is estimated over the budget
		c.Now, c.Sleep = clock.Now, clock.Sleep
	})
	b.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok").WithUsage(600, 100) })

	for range 2 {
		_, err := b.client.Complete(context.Background(), userSays("hi"))
		require.NoError(t, err)
	}
	// The first goes on the full budget and leaves it 600 in debt
	// (100-700); the second waits until it is full again: 700 tokens at
	// 100 a minute.
	require.Equal(t, []time.Duration{7 * time.Minute}, clock.Sleeps())
}

func TestWaitingForTheBudgetEndsWithTheContext(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) {
		c.RequestsPerMinute = 1
		c.Sleep = nil // a real timer: the second request would wait a minute
	})
	b.srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
	_, err := b.client.Complete(context.Background(), userSays("first"))
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	waiting := complete(ctx, b.client, "second")
	require.Eventually(t, func() bool { return b.client.Waiting() == 1 }, waitLimit, time.Millisecond)
	cancel()
	err = finished(t, waiting)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, b.client.Waiting())
	require.Len(t, b.srv.Requests(), 1)
}

func TestA429PausesEveryRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, retryAfter string }{
		{"seconds", "2"},
		{"HTTP date", limitT0.Add(2 * time.Second).Format(http.TimeFormat)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sleeps := newHeldSleeps()
			b := setup(t, func(c *llm.Config) {
				c.Now = func() time.Time { return limitT0 }
				c.Sleep = sleeps.sleep
			})
			b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests).WithRetryAfter(tc.retryAfter),
				llmtest.Text("ok"), llmtest.Text("ok"))

			first := complete(context.Background(), b.client, "first")
			require.Equal(t, 2*time.Second, sleeps.next(t), "the first waits to retry")
			second := complete(context.Background(), b.client, "second")
			require.Equal(t, 2*time.Second, sleeps.next(t), "the second waits for the same pause")
			require.Len(t, b.srv.Requests(), 1, "the second was not sent during the pause")
			require.Equal(t, 1, b.client.Waiting())

			close(sleeps.release)
			require.NoError(t, finished(t, first))
			require.NoError(t, finished(t, second))
			require.Len(t, b.srv.Requests(), 3)
			require.Empty(t, sleeps.calls, "neither waited twice")
		})
	}
}

func TestA429WithoutRetryAfterPausesForTheBackoff(t *testing.T) {
	t.Parallel()
	sleeps := newHeldSleeps()
	b := setup(t, func(c *llm.Config) {
		c.Now = func() time.Time { return limitT0 }
		c.Sleep = sleeps.sleep
	})
	b.srv.Enqueue(llmtest.Status(http.StatusTooManyRequests), llmtest.Text("ok"), llmtest.Text("ok"))

	first := complete(context.Background(), b.client, "first")
	backoff := sleeps.next(t)
	require.GreaterOrEqual(t, backoff, llm.DefaultRetryBase/2)
	require.LessOrEqual(t, backoff, llm.DefaultRetryBase)
	second := complete(context.Background(), b.client, "second")
	require.Equal(t, backoff, sleeps.next(t), "the second waits out the first's backoff")
	require.Len(t, b.srv.Requests(), 1)
	close(sleeps.release)
	require.NoError(t, finished(t, first))
	require.NoError(t, finished(t, second))
}

func TestOneWarningPerPause(t *testing.T) {
	t.Parallel()
	clock := newVirtualClock()
	b := setup(t, func(c *llm.Config) { c.Now = clock.Now })
	gate := make(chan struct{})
	limited := llmtest.Status(http.StatusTooManyRequests).WithRetryAfter("2")
	b.srv.Enqueue(limited.WithHold(gate), limited.WithHold(gate), llmtest.Text("ok"), llmtest.Text("ok"))
	const warning = "every request waits"

	first := complete(context.Background(), b.client, "first")
	second := complete(context.Background(), b.client, "second")
	b.srv.WaitRequests(t, 2, waitLimit)
	close(gate) // both get their 429 during the same pause
	require.NoError(t, finished(t, first))
	require.NoError(t, finished(t, second))
	require.Equal(t, 1, strings.Count(b.logs.String(), warning), b.logs.String())

	clock.Advance(3 * time.Second) // the pause is over: the next 429 begins another
	b.srv.Enqueue(limited, llmtest.Text("ok"))
	_, err := b.client.Complete(context.Background(), userSays("third"))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(b.logs.String(), warning), b.logs.String())
}

func TestATranscriberSharesTheClientsLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) {
		c.MaxConcurrency = 1
		c.Now = func() time.Time { return limitT0 }
	})
	tr, err := llm.NewTranscriber(llm.TranscriberConfig{
		BaseURL: b.srv.URL(), Model: "whisper-1", ShareLimits: b.client,
		Sleep: (&sleepRecorder{}).sleep, Logger: newLogger(&syncBuffer{}),
	})
	require.NoError(t, err)

	// A chat answer in flight holds the only slot.
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("held").WithHold(gate))
	held := complete(context.Background(), b.client, "hi")
	b.srv.WaitRequests(t, 1, waitLimit)
	b.srv.EnqueueTranscription(llmtest.TranscriptionStatus(http.StatusTooManyRequests).WithRetryAfter("5"),
		llmtest.Transcript("hello"))
	transcribed := make(chan error, 1)
	go func() {
		_, err := tr.Transcribe(context.Background(), "voice.ogg", oggBytes)
		transcribed <- err
	}()
	require.Eventually(t, func() bool { return b.client.Waiting() == 1 }, waitLimit, time.Millisecond)
	require.Empty(t, b.srv.TranscriptionRequests(), "the transcription waits for the slot")
	close(gate)
	require.NoError(t, finished(t, held))
	require.NoError(t, finished(t, transcribed))

	// Its 429 paused the client too.
	b.srv.Enqueue(llmtest.Text("ok"))
	_, err = b.client.Complete(context.Background(), userSays("after"))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{5 * time.Second}, b.sleeps.all())
}
