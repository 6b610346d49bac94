package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// EmbeddingRequest is one POST /embeddings the server received.
type EmbeddingRequest struct {
	// Model is the model asked for.
	Model string
	// Inputs are the texts to embed, in order; a lone string is one.
	Inputs []string
	// Dimensions is the length asked for (0: none sent).
	Dimensions int
	// EncodingFormat is "float", "base64", or "" (float).
	EncodingFormat string
	// Authorization is the Authorization header as sent.
	Authorization string
}

// OpenAI's bounds of an embeddings request: inputs in one request, and
// tokens (here words) in one input.
const (
	maxEmbeddingInputs = 2048
	maxEmbeddingTokens = 8192
)

// WithEmbedding sets how the server makes its vectors (default: the zero
// Embedding, 64 dimensions and no concepts).
func WithEmbedding(e Embedding) Option {
	return func(s *Server) { s.emb.vectors = e.Vectors() }
}

// WithEmbeddingModels makes the server embed only with these models and,
// as OpenAI does, answer a request for any other with 404 and code
// model_not_found. Without it any model name is answered.
func WithEmbeddingModels(names ...string) Option {
	return func(s *Server) { s.emb.models = append(modelSet(nil), names...) }
}

// WithEmbeddingLatency makes every embeddings answer (FailEmbeddings'
// statuses too) wait d, or until the client gives up. WithLatency does not
// apply to embeddings: an embedding model answers in milliseconds where a
// chat model takes seconds.
func WithEmbeddingLatency(d time.Duration) Option {
	return func(s *Server) { s.emb.latency = d }
}

// embeddings is what POST /embeddings keeps: its options, the requests it
// received, the failures scripted and the inputs embedded.
type embeddings struct {
	vectors func(model, text string, dims int) []float32
	models  modelSet
	latency time.Duration

	mu         sync.Mutex
	requests   []EmbeddingRequest
	failN      int
	failStatus int
	embedded   int           // inputs answered with their vectors
	changed    chan struct{} // closed and replaced whenever embedded grows
}

func newEmbeddings() *embeddings {
	return &embeddings{vectors: Embedding{}.Vectors(), changed: make(chan struct{})}
}

// FailEmbeddings makes the next n embeddings requests that reach the model
// (those the server does not refuse itself) get status, with an OpenAI
// error body; a 429 says Retry-After: 1. It panics on a status under 400,
// a mistake in the test.
func (s *Server) FailEmbeddings(n int, status int) {
	if status < 400 {
		panic("llmtest: FailEmbeddings takes an error status, not " + strconv.Itoa(status))
	}
	s.emb.mu.Lock()
	defer s.emb.mu.Unlock()
	s.emb.failN, s.emb.failStatus = max(n, 0), status
}

// EmbeddingRequests returns every embeddings request received so far, in
// order of arrival: those refused for their key or model and those failed
// included, malformed ones (400) not.
func (s *Server) EmbeddingRequests() []EmbeddingRequest {
	s.emb.mu.Lock()
	defer s.emb.mu.Unlock()
	return append([]EmbeddingRequest(nil), s.emb.requests...)
}

// WaitEmbeddedInputs waits until the server has answered n inputs in all
// with their vectors (for code that embeds in the background); it fails
// the test if that takes longer than timeout.
func (s *Server) WaitEmbeddedInputs(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.emb.mu.Lock()
		got, changed := s.emb.embedded, s.emb.changed
		s.emb.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("llmtest: waited %s for %d embedded inputs, got %d", timeout, n, got)
			return
		}
	}
}

// record stores a request.
func (e *embeddings) record(req EmbeddingRequest) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, req)
}

// failure takes one of the failures FailEmbeddings scripted: its status,
// or 0.
func (e *embeddings) failure() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failN == 0 {
		return 0
	}
	e.failN--
	return e.failStatus
}

// done counts n inputs embedded and wakes the waiters.
func (e *embeddings) done(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.embedded += n
	close(e.changed)
	e.changed = make(chan struct{})
}

// handleEmbeddings answers POST /embeddings as OpenAI does.
func handleEmbeddings(s *Server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, refusal := readEmbeddingRequest(r)
		if !s.authorized(w, req.Authorization) {
			if refusal.Message == "" {
				s.emb.record(req)
			}
			return
		}
		if refusal.Message != "" {
			writeAPIError(w, http.StatusBadRequest, refusal)
			return
		}
		s.emb.record(req)
		if !s.emb.models.serves(req.Model) {
			writeAPIError(w, http.StatusNotFound, apiError{
				Message: "The model `" + req.Model + "` does not exist or you do not have access to it.",
				Type:    "invalid_request_error",
				Code:    "model_not_found",
			})
			return
		}
		status := s.emb.failure()
		if !s.wait(r, s.emb.latency) {
			return
		}
		if status != 0 {
			if status == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "1")
			}
			writeError(w, status, "llmtest: scripted status "+strconv.Itoa(status), "")
			return
		}
		body := s.emb.answer(req)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
		s.emb.done(len(req.Inputs))
	}
}

// answer is the body of the answer to req: a vector per input, as floats
// or base64 as asked, and the usage, a token a word.
func (e *embeddings) answer(req EmbeddingRequest) []byte {
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(req.Inputs))
	tokens := 0
	for i, text := range req.Inputs {
		v := e.vectors(req.Model, text, req.Dimensions)
		data[i] = item{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			data[i].Embedding = base64.StdEncoding.EncodeToString(appendFloat32s(nil, v))
		}
		tokens += len(words(text))
	}
	body, err := json.Marshal(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	if err != nil {
		panic("llmtest: encoding embeddings: " + err.Error()) // floats of unit vectors always encode
	}
	return body
}

// maxEmbeddingBody bounds a request body: 2,048 long inputs.
const maxEmbeddingBody = 64 << 20

// readEmbeddingRequest reads and checks a request as OpenAI does, and
// returns its 400 when it would refuse it (a zero apiError: none).
func readEmbeddingRequest(r *http.Request) (EmbeddingRequest, apiError) {
	req := EmbeddingRequest{Authorization: r.Header.Get("Authorization")}
	var wire struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		Dimensions     *int            `json:"dimensions"`
		EncodingFormat string          `json:"encoding_format"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxEmbeddingBody))
	if err == nil {
		err = json.Unmarshal(body, &wire)
	}
	if err != nil {
		return req, invalid("llmtest: decoding request: "+fmt.Sprint(err), "", "")
	}
	req.Model, req.EncodingFormat = wire.Model, wire.EncodingFormat
	if wire.Dimensions != nil {
		req.Dimensions = *wire.Dimensions
	}
	var refusal apiError
	if req.Inputs, refusal = embeddingInputs(wire.Input); refusal.Message != "" {
		return req, refusal
	}
	return req, refusedEmbedding(req, wire.Dimensions != nil)
}

// embeddingInputs reads input, a string or an array of strings, or
// returns the 400 for it. Arrays of tokens, which OpenAI takes too, the
// fake refuses: it embeds words.
func embeddingInputs(input json.RawMessage) ([]string, apiError) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || string(input) == "null" {
		return nil, invalid("Missing required parameter: 'input'.", "input", "missing_required_parameter")
	}
	var s string
	if json.Unmarshal(input, &s) == nil {
		return []string{s}, apiError{}
	}
	var items []json.RawMessage
	if json.Unmarshal(input, &items) != nil {
		return nil, invalid("Invalid type for 'input': expected a string or an array of strings.", "input", "invalid_type")
	}
	out := make([]string, len(items))
	for i, item := range items {
		if json.Unmarshal(item, &out[i]) != nil {
			return nil, invalid(fmt.Sprintf("llmtest: 'input' item %d is %s, not a string: the fake does not take tokens.", i, item), "input", "invalid_type")
		}
	}
	return out, apiError{}
}

// refusedEmbedding is OpenAI's 400 for a request it would refuse (a zero
// apiError: none); dimensioned says the request sent dimensions.
func refusedEmbedding(req EmbeddingRequest, dimensioned bool) apiError {
	const invalidInput = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
	switch {
	case req.Model == "":
		return invalid("you must provide a model parameter", "", "")
	case len(req.Inputs) == 0:
		return invalid(invalidInput, "", "")
	case len(req.Inputs) > maxEmbeddingInputs:
		return invalid(fmt.Sprintf("Invalid 'input': array too long. Expected an array with maximum length %d, but got an array with length %d instead.",
			maxEmbeddingInputs, len(req.Inputs)), "input", "array_above_max_length")
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		return invalid("Invalid value: '"+req.EncodingFormat+"'. Supported values are: 'float' and 'base64'.", "encoding_format", "invalid_value")
	case dimensioned && req.Dimensions < 1:
		return invalid(fmt.Sprintf("Invalid 'dimensions': integer below minimum value. Expected a value >= 1, but got %d instead.", req.Dimensions),
			"dimensions", "integer_below_min_value")
	case dimensioned && req.Model == "text-embedding-ada-002":
		return invalid("This model does not support specifying dimensions.", "", "")
	}
	for _, text := range req.Inputs {
		if text == "" {
			return invalid(invalidInput, "", "")
		}
		if n := len(words(text)); n > maxEmbeddingTokens {
			return invalid(fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens (%d in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
				maxEmbeddingTokens, n, n), "", "")
		}
	}
	return apiError{}
}

// invalid is an invalid_request_error.
func invalid(msg, param, code string) apiError {
	return apiError{Message: msg, Type: "invalid_request_error", Param: param, Code: code}
}
