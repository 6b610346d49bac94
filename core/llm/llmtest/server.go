package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// DefaultModel is the model name the server reports unless WithModel is used.
const DefaultModel = "llmtest-model"

// Option configures a Server.
type Option func(*Server)

// WithModel sets the model name listed by GET /models and echoed in
// responses.
func WithModel(name string) Option {
	return func(s *Server) { s.model = name }
}

// WithResponder installs a dynamic responder, as Server.Respond does.
func WithResponder(f func(Request) Response) Option {
	return func(s *Server) { s.responder = f }
}

// Server is a fake OpenAI-compatible server. It is safe for concurrent use.
type Server struct {
	srv   *httptest.Server
	model string
	done  chan struct{} // closed on cleanup so slow answers stop waiting

	mu        sync.Mutex
	queue     []Response
	responder func(Request) Response
	requests  []Request
	arrived   chan struct{} // closed and replaced on every new request
	seq       int
}

// NewServer starts a fake server and closes it when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		model:   DefaultModel,
		done:    make(chan struct{}),
		arrived: make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "llmtest: unknown endpoint", "")
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// URL returns the base URL to configure clients with; it ends in "/v1".
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Enqueue appends scripted responses; each chat completion request takes the
// next one.
func (s *Server) Enqueue(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Pending returns how many scripted responses have not been used yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Respond sets the responder used when the queue is empty; nil removes it.
func (s *Server) Respond(f func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// Requests returns every chat completion request received so far, in order
// of arrival.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WaitRequests waits until at least n chat completion requests have arrived
// and returns them; it fails the test if that takes longer than timeout.
func (s *Server) WaitRequests(t testing.TB, n int, timeout time.Duration) []Request {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if len(s.requests) >= n {
			reqs := append([]Request(nil), s.requests...)
			s.mu.Unlock()
			return reqs
		}
		arrived, got := s.arrived, len(s.requests)
		s.mu.Unlock()
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("llmtest: waited %s for %d requests, got %d", timeout, n, got)
			return nil
		}
	}
}

// record stores a request and picks its response: a scripted one, or the
// responder to call (outside the lock, so it may use the Server).
func (s *Server) record(req Request) (Response, string, func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
	s.seq++
	id := "chatcmpl-llmtest-" + strconv.Itoa(s.seq)
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return r, id, nil
	}
	if s.responder != nil {
		return Response{}, id, s.responder
	}
	return Status(http.StatusInternalServerError).WithErrorMessage("llmtest: no scripted response"), id, nil
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: reading body: "+err.Error(), "")
		return
	}
	var chat openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &chat); err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: decoding request: "+err.Error(), "")
		return
	}
	req := Request{Chat: chat, Authorization: r.Header.Get("Authorization"), Body: body}
	resp, id, responder := s.record(req)
	if responder != nil {
		resp = responder(req)
	}

	if resp.delay > 0 {
		timer := time.NewTimer(resp.delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	if resp.hold != nil {
		select {
		case <-resp.hold:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
	s.write(w, chat, resp, id)
}

func (s *Server) write(w http.ResponseWriter, chat openai.ChatCompletionRequest, resp Response, id string) {
	if resp.retryAfter != "" {
		w.Header().Set("Retry-After", resp.retryAfter)
	}
	switch {
	case resp.raw:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.status)
		_, _ = io.WriteString(w, resp.body)
	case resp.status != http.StatusOK:
		msg := resp.body
		if msg == "" {
			msg = "llmtest: scripted status " + strconv.Itoa(resp.status)
		}
		writeError(w, resp.status, msg, "")
	case chat.Stream:
		s.writeStream(w, chat, resp, id)
	case resp.malformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+id+`","choices":[{"message":{"role":"assistant","content":"trunc`)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
			ID:      id,
			Object:  "chat.completion",
			Created: time.Now().Unix(),
			Model:   s.model,
			Choices: []openai.ChatCompletionChoice{{
				Index:        0,
				Message:      resp.message(),
				FinishReason: resp.finish(),
			}},
			Usage: resp.usageOrDefault(),
		})
	}
}

func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id":       s.model,
			"object":   "model",
			"created":  0,
			"owned_by": "llmtest",
		}},
	})
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg, errType string) {
	if errType == "" {
		errType = "server_error"
		if status < 500 {
			errType = "invalid_request_error"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": errType, "code": nil},
	})
}
