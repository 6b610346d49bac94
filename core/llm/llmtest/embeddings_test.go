package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

const embedModel = "text-embedding-3-small"

var wedding = llmtest.Embedding{Concepts: map[string][]string{
	"wedding": {"wedding", "married", "marry", "bride"},
}}

func embed(t *testing.T, b testBundle, req openai.EmbeddingRequestStrings) openai.EmbeddingResponse {
	t.Helper()
	resp, err := b.client.CreateEmbeddings(context.Background(), req)
	require.NoError(t, err)
	return resp
}

func dot(a, b []float32) float64 {
	var sum float64
	for i := range a {
		sum += float64(a[i]) * float64(b[i])
	}
	return sum
}

func length(v []float32) float64 { return math.Sqrt(dot(v, v)) }

func cosine(a, b []float32) float64 { return dot(a, b) / (length(a) * length(b)) }

func TestEmbeddingsOneVectorPerInputInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inputs := []string{"my sister's wedding", "the weather in Lisbon", "日本語"}
	resp := embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: inputs})

	require.Equal(t, "list", resp.Object)
	require.EqualValues(t, embedModel, resp.Model)
	require.Len(t, resp.Data, 3)
	for i, d := range resp.Data {
		require.Equal(t, "embedding", d.Object)
		require.Equal(t, i, d.Index)
		require.Len(t, d.Embedding, llmtest.DefaultEmbeddingDimensions)
		require.InDelta(t, 1, length(d.Embedding), 1e-5, "unit length")
		require.Equal(t, llmtest.Embedding{}.Vector(embedModel, inputs[i], 0), d.Embedding, "input %d", i)
	}
	require.NotEqual(t, resp.Data[0].Embedding, resp.Data[1].Embedding)
	// my, sister, s, wedding; the, weather, in, lisbon; 日, 本, 語.
	require.Equal(t, 11, resp.Usage.PromptTokens)
	require.Equal(t, 11, resp.Usage.TotalTokens)
	require.Equal(t, []llmtest.EmbeddingRequest{{Model: embedModel, Inputs: inputs, EncodingFormat: "",
		Authorization: "Bearer sk-test"}}, b.srv.EmbeddingRequests())
}

func TestEmbeddingsDimensions(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithEmbedding(llmtest.Embedding{Dimensions: 8}))
	resp := embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"hello"}})
	require.Len(t, resp.Data[0].Embedding, 8, "the server's default")

	resp = embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"hello"}, Dimensions: 256})
	require.Len(t, resp.Data[0].Embedding, 256, "the request's")
	require.InDelta(t, 1, length(resp.Data[0].Embedding), 1e-5)
	require.Equal(t, 256, b.srv.EmbeddingRequests()[1].Dimensions)
}

func TestEmbeddingsBase64IsLittleEndianFloat32(t *testing.T) {
	t.Parallel()
	b := setup(t)
	inputs := []string{"alpha", "beta"}
	resp := embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: inputs,
		EncodingFormat: openai.EmbeddingEncodingFormatBase64})
	for i, d := range resp.Data {
		require.Equal(t, llmtest.Embedding{}.Vector(embedModel, inputs[i], 0), d.Embedding)
	}
	require.Equal(t, "base64", b.srv.EmbeddingRequests()[0].EncodingFormat)

	// On the wire, a string where the floats were.
	status, body := postEmbeddings(t, b.srv, `{"model":"m","input":"alpha","encoding_format":"base64"}`)
	require.Equal(t, http.StatusOK, status)
	var raw struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &raw))
	require.Len(t, raw.Data[0].Embedding, 344, "64 float32s, 256 bytes, in base64")
}

func TestEmbeddingsTakeALoneString(t *testing.T) {
	t.Parallel()
	b := setup(t)
	status, body := postEmbeddings(t, b.srv, `{"model":"m","input":"one text"}`)
	require.Equal(t, http.StatusOK, status, body)
	var resp openai.EmbeddingResponse
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Len(t, resp.Data, 1)
	require.Equal(t, llmtest.Embedding{}.Vector("m", "one text", 0), resp.Data[0].Embedding)
	require.Equal(t, []string{"one text"}, b.srv.EmbeddingRequests()[0].Inputs)
}

func TestEmbeddingParaphrasesAreNear(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithEmbedding(wedding))
	resp := embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{
		"my sister's wedding", "Ana is getting married in June", "the weather in Lisbon is mild",
	}})
	sister, ana, weather := resp.Data[0].Embedding, resp.Data[1].Embedding, resp.Data[2].Embedding
	require.Greater(t, cosine(sister, ana), 0.5, "paraphrases through the wedding concept")
	require.Less(t, cosine(sister, weather), 0.3, "unrelated")
	require.Less(t, cosine(ana, weather), 0.3, "unrelated")

	// Without the concept the paraphrase is as far as anything else.
	plain := llmtest.Embedding{}
	require.Less(t, cosine(plain.Vector(embedModel, "my sister's wedding", 0), plain.Vector(embedModel, "Ana is getting married in June", 0)), 0.3)
	// Function words weigh little: a question finds its memory.
	require.Greater(t, cosine(wedding.Vector(embedModel, "what did I say about the wedding?", 0), sister), 0.7)
}

func TestEmbeddingsAreDeterministicPerModel(t *testing.T) {
	t.Parallel()
	text := "Ana is getting married in June"
	e := llmtest.Embedding{Concepts: wedding.Concepts}
	require.Equal(t, e.Vector(embedModel, text, 0), e.Vector(embedModel, text, 0))
	require.Equal(t, e.Vector(embedModel, text, 0), e.Vector(embedModel, "ANA, is getting married... in June!", 0),
		"case and punctuation aside")
	require.Less(t, math.Abs(cosine(e.Vector(embedModel, text, 0), e.Vector("text-embedding-3-large", text, 0))), 0.3,
		"another model's vectors are unrelated")
	require.Equal(t, e.Vector("m", "?!", 0), e.Vector("m", "...", 0), "no words: one fixed vector")
	require.InDelta(t, 1, length(e.Vector("m", "?!", 0)), 1e-5)
	require.Len(t, llmtest.Embedding{Dimensions: 5}.Vector("m", "x", 0), 5)
	require.Len(t, llmtest.Embedding{Dimensions: 5}.Vector("m", "x", 7), 7)
}

func TestEmbeddingsRefusedAsOpenAIRefuses(t *testing.T) {
	t.Parallel()
	many, _ := json.Marshal(make([]string, 2049))
	for _, tc := range []struct{ name, body, param, message string }{
		{"token arrays", `{"model":"m","input":[[1,2,3]]}`, "input", "not a string"},
		{"tokens", `{"model":"m","input":[1,2,3]}`, "input", "not a string"},
		{"no input", `{"model":"m"}`, "input", "Missing required parameter: 'input'."},
		{"empty array", `{"model":"m","input":[]}`, "", "'$.input' is invalid"},
		{"empty string", `{"model":"m","input":""}`, "", "'$.input' is invalid"},
		{"an empty string", `{"model":"m","input":["a",""]}`, "", "'$.input' is invalid"},
		{"over 2048 inputs", `{"model":"m","input":` + strings.ReplaceAll(string(many), `""`, `"x"`) + `}`, "input", "maximum length 2048"},
		{"no model", `{"input":"a"}`, "", "you must provide a model parameter"},
		{"encoding format", `{"model":"m","input":"a","encoding_format":"hex"}`, "encoding_format", "Supported values are: 'float' and 'base64'."},
		{"zero dimensions", `{"model":"m","input":"a","dimensions":0}`, "dimensions", "Expected a value >= 1"},
		{"dimensions of ada", `{"model":"text-embedding-ada-002","input":"a","dimensions":8}`, "", "does not support specifying dimensions"},
		{"over 8192 tokens", `{"model":"m","input":"` + strings.Repeat("w ", 8193) + `"}`, "", "maximum context length is 8192 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			status, body := postEmbeddings(t, b.srv, tc.body)
			require.Equal(t, http.StatusBadRequest, status, body)
			e := decodeError(t, body)
			require.Contains(t, e.Message, tc.message)
			require.Equal(t, "invalid_request_error", e.Type)
			if tc.param == "" {
				require.Nil(t, e.Param)
			} else {
				require.Equal(t, tc.param, *e.Param)
			}
			require.Empty(t, b.srv.EmbeddingRequests(), "a malformed request is not recorded")
		})
	}
}

func TestEmbeddingsUnknownModel(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithEmbeddingModels(embedModel))
	embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"a"}})
	_, err := b.client.CreateEmbeddings(context.Background(), openai.EmbeddingRequestStrings{Model: "nomic-embed-text", Input: []string{"a"}})
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusNotFound, apiErr.HTTPStatusCode)
	require.Equal(t, "model_not_found", apiErr.Code)
	require.Equal(t, "The model `nomic-embed-text` does not exist or you do not have access to it.", apiErr.Message)
	require.Len(t, b.srv.EmbeddingRequests(), 2, "a refused request is recorded")
}

func TestFailEmbeddings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.FailEmbeddings(2, http.StatusTooManyRequests)
	for range 2 {
		resp, err := http.Post(b.srv.URL()+"/embeddings", "application/json", strings.NewReader(`{"model":"m","input":"a"}`))
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
		require.Equal(t, "1", resp.Header.Get("Retry-After"))
	}
	embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"a"}})

	b.srv.FailEmbeddings(1, http.StatusInternalServerError)
	_, err := b.client.CreateEmbeddings(context.Background(), openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"a"}})
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusInternalServerError, apiErr.HTTPStatusCode)
	require.Equal(t, "server_error", apiErr.Type)
	embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"a"}})
	require.Len(t, b.srv.EmbeddingRequests(), 5, "failed requests are recorded")
	require.Panics(t, func() { b.srv.FailEmbeddings(1, http.StatusOK) })
}

func TestEmbeddingsRequireTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithAPIKey("sk-right-0123456789wxyz"))
	_, err := b.client.CreateEmbeddings(context.Background(), openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"a"}})
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.HTTPStatusCode)
	require.Len(t, b.srv.EmbeddingRequests(), 1)
}

func TestWaitEmbeddedInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.FailEmbeddings(1, http.StatusInternalServerError)
	errs := make(chan error, 3)
	for _, inputs := range [][]string{{"a", "b"}, {"c", "d", "e"}, {"f"}} {
		go func() {
			_, err := b.client.CreateEmbeddings(context.Background(), openai.EmbeddingRequestStrings{Model: embedModel, Input: inputs})
			errs <- err
		}()
	}
	// One of the three failed: at least 3 inputs were embedded, not 6.
	b.srv.WaitEmbeddedInputs(t, 3, 10*time.Second)
	failed := 0
	for range 3 {
		if err := <-errs; err != nil {
			failed++
		}
	}
	require.Equal(t, 1, failed)

	fake := &fatalRecorder{TB: t}
	b.srv.WaitEmbeddedInputs(fake, 7, 10*time.Millisecond)
	require.Contains(t, fake.fatal, "for 7 embedded inputs, got ")
}

// fatalRecorder keeps a Fatalf's message instead of ending the test.
type fatalRecorder struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fatal = fmt.Sprintf(format, args...)
}

func TestEmbeddingLatency(t *testing.T) {
	t.Parallel()
	const latency = 50 * time.Millisecond
	b := setup(t, llmtest.WithEmbeddingLatency(latency))
	start := time.Now()
	embed(t, b, openai.EmbeddingRequestStrings{Model: embedModel, Input: []string{"a"}})
	require.GreaterOrEqual(t, time.Since(start), latency)
}

// postEmbeddings posts body as it is, and returns the status and the body.
func postEmbeddings(t *testing.T, srv *llmtest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL()+"/embeddings", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(out)
}

// wireError is the "error" object of an OpenAI error body.
type wireError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func decodeError(t *testing.T, body string) wireError {
	t.Helper()
	var e struct {
		Error *wireError `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.NotNil(t, e.Error, body)
	return *e.Error
}
