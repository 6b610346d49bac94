package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

const embedModel = "text-embedding-3-small"

var wedding = llmtest.Embedding{Concepts: map[string][]string{"wedding": {"wedding", "married", "marry", "bride"}}}

type embedderBundle struct {
	srv    *llmtest.Server
	e      *llm.Embedder
	sleeps *sleepRecorder
	logs   *syncBuffer
}

// setupEmbedder starts a fake server and an embedder for it whose retry
// waits are recorded instead of slept; tweak adjusts the config.
func setupEmbedder(t *testing.T, opts []llmtest.Option, tweak ...func(*llm.EmbedderConfig)) embedderBundle {
	t.Helper()
	srv := llmtest.NewServer(t, append([]llmtest.Option{llmtest.WithEmbedding(wedding)}, opts...)...)
	sleeps := &sleepRecorder{}
	logs := &syncBuffer{}
	cfg := llm.EmbedderConfig{ServiceConfig: llm.ServiceConfig{
		BaseURL: srv.URL(),
		APIKey:  apiKey,
		Model:   embedModel,
		Sleep:   sleeps.sleep,
		Logger:  newLogger(logs),
	}}
	for _, f := range tweak {
		f(&cfg)
	}
	e, err := llm.NewEmbedder(cfg)
	require.NoError(t, err)
	return embedderBundle{srv: srv, e: e, sleeps: sleeps, logs: logs}
}

func TestEmbedReturnsVectorsInOrder(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil)
	inputs := []string{"my sister's wedding", "the weather in Lisbon", "Ana is getting married in June"}
	vecs, err := b.e.Embed(context.Background(), inputs)
	require.NoError(t, err)
	require.Len(t, vecs, 3)
	for i, v := range vecs {
		require.Equal(t, wedding.Vector(embedModel, inputs[i], 0), v, "input %d", i)
	}
	require.Equal(t, []llmtest.EmbeddingRequest{{Model: embedModel, Inputs: inputs, EncodingFormat: "float",
		Authorization: "Bearer " + apiKey}}, b.srv.EmbeddingRequests())
	require.Equal(t, embedModel, b.e.Model())
	require.Zero(t, b.e.Dimensions())

	vecs, err = b.e.Embed(context.Background(), nil)
	require.NoError(t, err)
	require.Nil(t, vecs)
	require.Len(t, b.srv.EmbeddingRequests(), 1, "no inputs, no request")
}

func TestEmbedSendsDimensions(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil, func(c *llm.EmbedderConfig) { c.Dimensions = 32 })
	vecs, err := b.e.Embed(context.Background(), []string{"a", "b"})
	require.NoError(t, err)
	require.Len(t, vecs[0], 32)
	require.Len(t, vecs[1], 32)
	require.Equal(t, 32, b.srv.EmbeddingRequests()[0].Dimensions)
	require.Equal(t, 32, b.e.Dimensions())
}

func TestEmbedSplitsManyInputs(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil)
	inputs := make([]string, 600)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("memory number %d", i)
	}
	vecs, err := b.e.Embed(context.Background(), inputs)
	require.NoError(t, err)
	require.Len(t, vecs, 600)
	for i, v := range vecs {
		require.Equal(t, wedding.Vector(embedModel, inputs[i], 0), v, "input %d", i)
	}
	reqs := b.srv.EmbeddingRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, inputs[:256], reqs[0].Inputs)
	require.Equal(t, inputs[256:512], reqs[1].Inputs)
	require.Equal(t, inputs[512:], reqs[2].Inputs)
}

func TestEmbedRetriesA429AfterRetryAfter(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil)
	b.srv.FailEmbeddings(1, http.StatusTooManyRequests)
	vecs, err := b.e.Embed(context.Background(), []string{"hello"})
	require.NoError(t, err)
	require.Len(t, vecs, 1)
	require.Equal(t, []time.Duration{time.Second}, b.sleeps.all(), "Retry-After: 1")
	require.Len(t, b.srv.EmbeddingRequests(), 2)
}

func TestEmbedSurfacesServerErrors(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil, func(c *llm.EmbedderConfig) { c.MaxRetries = 1 })
	b.srv.FailEmbeddings(1, http.StatusInternalServerError)
	_, err := b.e.Embed(context.Background(), []string{"hello"})
	require.NoError(t, err, "a 500 is retried")

	b.srv.FailEmbeddings(2, http.StatusInternalServerError)
	_, err = b.e.Embed(context.Background(), []string{"hello"})
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusInternalServerError, e.StatusCode)
	require.True(t, e.Retryable)
	require.Equal(t, "llm: embeddings: 500 Internal Server Error after 2 attempts: llmtest: scripted status 500", e.Message)
	require.Len(t, b.srv.EmbeddingRequests(), 4)
	require.Contains(t, b.logs.String(), "status=500")
}

// answering is a server whose embeddings answer is body, whatever the
// request, or body(inputs) when it depends on them.
func answering(t *testing.T, body func(inputs int) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body(len(req.Input))))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// vectorsAnswer is an embeddings answer with the given vectors, as JSON
// arrays, at indexes 0, 1, ...
func vectorsAnswer(vecs ...string) string {
	items := make([]string, len(vecs))
	for i, v := range vecs {
		items[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, v)
	}
	return `{"object":"list","model":"m","data":[` + strings.Join(items, ",") + `],"usage":{"prompt_tokens":1,"total_tokens":1}}`
}

func TestEmbedRefusesMalformedAnswers(t *testing.T) {
	t.Parallel()
	same := func(body string) func(int) string { return func(int) string { return body } }
	for _, tc := range []struct {
		name   string
		body   func(inputs int) string
		inputs int
		dims   int
		want   string
	}{
		{"too few vectors", same(vectorsAnswer("[1,0]")), 2, 0, "1 vectors for 2 inputs"},
		{"too many vectors", same(vectorsAnswer("[1,0]", "[0,1]", "[1,1]")), 2, 0, "3 vectors for 2 inputs"},
		{"mixed lengths", same(vectorsAnswer("[1,0]", "[0,1,0]")), 2, 0, "input 1's vector has 3 dimensions, not 2"},
		{"empty vectors", same(vectorsAnswer("[]", "[]")), 2, 0, "an empty vector for input 0"},
		{"not the dimensions asked", same(vectorsAnswer("[1,0]", "[0,1]")), 2, 3, "input 0's vector has 2 dimensions, not 3"},
		{"the same index twice", same(strings.ReplaceAll(vectorsAnswer("[1,0]", "[0,1]"), `"index":1`, `"index":0`)), 2, 0,
			"two vectors for input 0"},
		{"lengths differ between requests", func(n int) string {
			vecs := make([]string, n)
			for i := range vecs {
				vecs[i] = map[bool]string{true: "[1,0]", false: "[1,0,0]"}[n == 256]
			}
			return vectorsAnswer(vecs...)
		}, 300, 0, "input 256's vector has 3 dimensions, not 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, err := llm.NewEmbedder(llm.EmbedderConfig{ServiceConfig: llm.ServiceConfig{
				BaseURL: answering(t, tc.body), APIKey: apiKey, Model: "m", Sleep: (&sleepRecorder{}).sleep,
				Logger: newLogger(&syncBuffer{}),
			}, Dimensions: tc.dims})
			require.NoError(t, err)
			inputs := make([]string, tc.inputs)
			for i := range inputs {
				inputs[i] = "x"
			}
			_, err = e.Embed(context.Background(), inputs)
			var le *llm.Error
			require.ErrorAs(t, err, &le)
			require.Equal(t, "llm: embeddings: "+tc.want, le.Message)
			require.Equal(t, http.StatusOK, le.StatusCode)
			require.False(t, le.Retryable)
		})
	}
}

func TestEmbedRefusesWhatCannotBeSent(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil)
	_, err := b.e.Embed(context.Background(), []string{"a", ""})
	require.EqualError(t, err, "llm: embeddings: input 1 is empty")
	require.Empty(t, b.srv.EmbeddingRequests())

	_, err = llm.NewEmbedder(llm.EmbedderConfig{ServiceConfig: llm.ServiceConfig{BaseURL: b.srv.URL()}})
	require.ErrorContains(t, err, "llm: embeddings: no model")
	_, err = llm.NewEmbedder(llm.EmbedderConfig{ServiceConfig: llm.ServiceConfig{BaseURL: b.srv.URL(), Model: embedModel}, Dimensions: -1})
	require.ErrorContains(t, err, "dimensions must not be negative")
}

func TestEmbedCanceled(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.e.Embed(ctx, []string{"hello"})
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, strings.HasPrefix(e.Message, "llm: embeddings: "), e.Message)
}

func TestEmbedNeverShowsTheKey(t *testing.T) {
	t.Parallel()
	b := setupEmbedder(t, []llmtest.Option{llmtest.WithAPIKey("sk-right-0123456789wxyz")},
		func(c *llm.EmbedderConfig) { c.AuthHint = "check llm.embeddings.api_key" })
	_, err := b.e.Embed(context.Background(), []string{"hello"})
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusUnauthorized, e.StatusCode)
	require.Contains(t, e.Message, "llm: embeddings: 401 Unauthorized")
	require.Contains(t, e.Message, "; check llm.embeddings.api_key")
	for u := error(e); u != nil; u = errors.Unwrap(u) {
		require.NotContains(t, u.Error(), apiKey)
	}
	require.NotContains(t, fmt.Sprintf("%+v", err), apiKey)
	require.NotContains(t, b.logs.String(), apiKey)

	// Nor in a retried failure's logs and error.
	b.srv.SetAPIKey("")
	b.srv.FailEmbeddings(4, http.StatusBadGateway)
	_, err = b.e.Embed(context.Background(), []string{"hello"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), apiKey)
	require.Contains(t, b.logs.String(), "status=502")
	require.NotContains(t, b.logs.String(), apiKey)
}

// sharingEmbedder builds an Embedder on srv sharing client's limits.
func sharingEmbedder(t *testing.T, srv *llmtest.Server, client *llm.Client, sleep func(context.Context, time.Duration) error) *llm.Embedder {
	t.Helper()
	e, err := llm.NewEmbedder(llm.EmbedderConfig{ServiceConfig: llm.ServiceConfig{
		BaseURL: srv.URL(), APIKey: apiKey, Model: embedModel, ShareLimits: client,
		Sleep: sleep, Logger: newLogger(&syncBuffer{}),
	}})
	require.NoError(t, err)
	return e
}

func TestAnEmbedderIsChargedToTheSharedBudgets(t *testing.T) {
	t.Parallel()
	t.Run("tokens, corrected by usage", func(t *testing.T) {
		t.Parallel()
		clock := newVirtualClock()
		b := setup(t, func(c *llm.Config) {
			c.TokensPerMinute = 100
			c.Now, c.Sleep = clock.Now, clock.Sleep
		})
		e := sharingEmbedder(t, b.srv, b.client, clock.Sleep)
		// 200 bytes, estimated 50 tokens; the fake counts a token a word:
		// 100.
		input := []string{strings.Repeat("w ", 100)}
		_, err := e.Embed(context.Background(), input)
		require.NoError(t, err)
		require.Empty(t, clock.Sleeps(), "the first goes on the full budget")
		_, err = e.Embed(context.Background(), input)
		require.NoError(t, err)
		// The first used all 100; the second, estimated 50, waits for 50
		// at 100 a minute. Uncorrected, it would have gone at once.
		require.Equal(t, []time.Duration{30 * time.Second}, clock.Sleeps())
	})

	t.Run("requests, with the chat's", func(t *testing.T) {
		t.Parallel()
		clock := newVirtualClock()
		b := setup(t, func(c *llm.Config) {
			c.RequestsPerMinute = 1
			c.Now, c.Sleep = clock.Now, clock.Sleep
		})
		b.srv.Enqueue(llmtest.Text("ok"))
		_, err := b.client.Complete(context.Background(), userSays("hi"))
		require.NoError(t, err)
		e := sharingEmbedder(t, b.srv, b.client, clock.Sleep)
		_, err = e.Embed(context.Background(), []string{"hello"})
		require.NoError(t, err)
		require.Equal(t, []time.Duration{time.Minute}, clock.Sleeps(), "the embedding waits for the chat's minute")
	})
}

func TestAnEmbedderSharesTheClientsSlotsAndPause(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *llm.Config) {
		c.MaxConcurrency = 1
		c.Now = func() time.Time { return limitT0 }
	})
	e := sharingEmbedder(t, b.srv, b.client, (&sleepRecorder{}).sleep)

	// A chat answer in flight holds the only slot.
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("held").WithHold(gate))
	held := complete(context.Background(), b.client, "hi")
	b.srv.WaitRequests(t, 1, waitLimit)
	b.srv.FailEmbeddings(1, http.StatusTooManyRequests)
	embedded := make(chan error, 1)
	go func() {
		_, err := e.Embed(context.Background(), []string{"hello"})
		embedded <- err
	}()
	require.Eventually(t, func() bool { return b.client.Waiting() == 1 }, waitLimit, time.Millisecond)
	require.Empty(t, b.srv.EmbeddingRequests(), "the embedding waits for the slot")
	close(gate)
	require.NoError(t, finished(t, held))
	require.NoError(t, finished(t, embedded))
	require.Len(t, b.srv.EmbeddingRequests(), 2)

	// Its 429 paused the client too.
	b.srv.Enqueue(llmtest.Text("ok"))
	_, err := b.client.Complete(context.Background(), userSays("after"))
	require.NoError(t, err)
	require.Equal(t, []time.Duration{time.Second}, b.sleeps.all())
}
