package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
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

// WithModels makes the server list exactly these models on GET /models
// (instead of the one WithModel names) and, as OpenAI does, refuse a chat
// completion for any other with 404 and code model_not_found ("The model
// `x` does not exist or you do not have access to it."). Without it the
// server answers for whatever model a request names.
func WithModels(names ...string) Option {
	return func(s *Server) { s.models = append([]string(nil), names...) }
}

// WithResponder installs a dynamic responder, as Server.Respond does.
func WithResponder(f func(Request) Response) Option {
	return func(s *Server) { s.responder = f }
}

// WithAPIKey makes the server require "Authorization: Bearer <key>", as
// OpenAI does: any other request gets 401 with OpenAI's error body
// (code invalid_api_key), which shows only the last four characters of the
// key sent. "" (the default) accepts any request.
func WithAPIKey(key string) Option {
	return func(s *Server) { s.apiKey = key }
}

// WithMaxTokensField makes the server take the completion bound only in the
// named field, "max_tokens" or "max_completion_tokens", and refuse a request
// carrying the other with OpenAI's 400 (code unsupported_parameter), as
// OpenAI's reasoning models refuse max_tokens. It panics on any other name,
// a mistake in the test.
func WithMaxTokensField(name string) Option {
	if name != fieldMaxTokens && name != fieldMaxCompletionTokens {
		panic("llmtest: WithMaxTokensField takes max_tokens or max_completion_tokens, not " + strconv.Quote(name))
	}
	return func(s *Server) { s.maxTokensField = name }
}

// WithModelMaxTokensField is WithMaxTokensField for one model only: a
// server that hosts models of both kinds (a reasoning model that takes
// only max_completion_tokens beside one that takes only max_tokens).
func WithModelMaxTokensField(model, name string) Option {
	if name != fieldMaxTokens && name != fieldMaxCompletionTokens {
		panic("llmtest: WithModelMaxTokensField takes max_tokens or max_completion_tokens, not " + strconv.Quote(name))
	}
	return func(s *Server) {
		if s.modelTokensField == nil {
			s.modelTokensField = map[string]string{}
		}
		s.modelTokensField[model] = name
	}
}

// WithLatency makes every model answer (chat, transcription, speech,
// images; embeddings have WithEmbeddingLatency) wait d (or until the
// client gives up) before it is sent, on top of any response's own
// WithDelay: a model that takes a while, without
// scripting each response. Refusals the server itself makes (authentication, unsupported
// parameter) are not delayed.
func WithLatency(d time.Duration) Option {
	return func(s *Server) { s.latency = d }
}

// Server is a fake OpenAI-compatible server. It is safe for concurrent use.
type Server struct {
	// Speech and Images are POST /audio/speech and
	// POST /images/generations: script their answers and read their
	// requests through them.
	Speech *Endpoint[SpeechRequest]
	Images *Endpoint[ImageRequest]

	srv            *httptest.Server
	model          string
	models         modelSet // WithModels: listed, and the only ones answered
	maxTokensField string
	// modelTokensField is WithModelMaxTokensField's, by model.
	modelTokensField map[string]string
	template         ChatTemplate
	latency          time.Duration
	stream           streamScript  // WithStreamDelay, WithWordDeltas: defaults for streamed answers
	done             chan struct{} // closed on cleanup so slow answers stop waiting

	mu        sync.Mutex
	apiKey    string
	queue     []Response
	responder func(Request) Response
	requests  []Request
	arrived   chan struct{} // closed and replaced on every new request
	seq       int

	tqueue      []TranscriptionResponse
	transcriber func(TranscriptionRequest) TranscriptionResponse
	trequests   []TranscriptionRequest

	emb *embeddings // POST /embeddings, with its own lock
}

// NewServer starts a fake server and closes it when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		model:   DefaultModel,
		done:    make(chan struct{}),
		arrived: make(chan struct{}),
		Speech:  newEndpoint[SpeechRequest]("speech"),
		Images:  newEndpoint[ImageRequest]("image"),
		emb:     newEmbeddings(),
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handleTranscription)
	mux.HandleFunc("POST /v1/audio/speech", handleSpeech(s))
	mux.HandleFunc("POST /v1/images/generations", handleImages(s))
	mux.HandleFunc("POST /v1/embeddings", handleEmbeddings(s))
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

// SetAPIKey changes the key the server requires (see WithAPIKey); "" accepts
// any request. A test can make authentication fail and then recover.
func (s *Server) SetAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
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

// recordRefused stores a request the server refused itself; it takes no
// scripted response.
func (s *Server) recordRefused(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	close(s.arrived)
	s.arrived = make(chan struct{})
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
	if !s.authorized(w, req.Authorization) {
		s.recordRefused(req)
		return
	}
	if !s.models.serves(chat.Model) {
		s.recordRefused(req)
		writeAPIError(w, http.StatusNotFound, apiError{
			Message: "The model `" + chat.Model + "` does not exist or you do not have access to it.",
			Type:    "invalid_request_error",
			Code:    "model_not_found",
		})
		return
	}
	if msg := s.template.refusal(chat.Messages); msg != "" {
		s.recordRefused(req)
		writeTemplateError(w, msg)
		return
	}
	taken := s.maxTokensField
	if f, ok := s.modelTokensField[chat.Model]; ok {
		taken = f
	}
	if field := refusedField(body, taken); field != "" {
		s.recordRefused(req)
		writeUnsupportedParameter(w, field, taken)
		return
	}
	resp, id, responder := s.record(req)
	if responder != nil {
		resp = responder(req)
	}

	for _, d := range []time.Duration{s.latency, resp.delay} {
		if !s.wait(r, d) {
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
	s.write(w, r, chat, resp.limit(req.MaxTokens()), id)
}

// wait waits d and reports true, or false when the client or the server
// gave up first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.done:
		return false
	}
}

// authorized checks the Authorization header against the required key and
// answers 401 the way OpenAI does when it does not match.
func (s *Server) authorized(w http.ResponseWriter, auth string) bool {
	s.mu.Lock()
	key := s.apiKey
	s.mu.Unlock()
	if key == "" || auth == "Bearer "+key {
		return true
	}
	sent, hasBearer := strings.CutPrefix(auth, "Bearer ")
	if !hasBearer || sent == "" {
		writeAPIError(w, http.StatusUnauthorized, apiError{
			Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
			Type:    "invalid_request_error",
		})
		return false
	}
	writeAPIError(w, http.StatusUnauthorized, apiError{
		Message: "Incorrect API key provided: " + maskKey(sent) + ". You can find your API key at https://platform.openai.com/account/api-keys.",
		Type:    "invalid_request_error",
		Code:    "invalid_api_key",
	})
	return false
}

// maskKey shows a key the way OpenAI's errors do, "sk-...abcd": only its
// last four characters (and its "sk-" prefix), never the whole of it.
func maskKey(key string) string {
	if len(key) < 8 {
		return "***"
	}
	prefix := ""
	if strings.HasPrefix(key, "sk-") {
		prefix = "sk-"
	}
	return prefix + "..." + key[len(key)-4:]
}

// refusedField returns the token bound field the request carries when the
// server takes only the other, taken (WithMaxTokensField; "": either), or
// "".
func refusedField(body []byte, taken string) string {
	var other string
	switch taken {
	case fieldMaxTokens:
		other = fieldMaxCompletionTokens
	case fieldMaxCompletionTokens:
		other = fieldMaxTokens
	default:
		return ""
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return ""
	}
	if _, ok := fields[other]; ok {
		return other
	}
	return ""
}

// Token bound fields of a chat completion request.
const (
	fieldMaxTokens           = "max_tokens"
	fieldMaxCompletionTokens = "max_completion_tokens"
)

// writeUnsupportedParameter answers as OpenAI does when a model does not
// take a parameter.
func writeUnsupportedParameter(w http.ResponseWriter, field, instead string) {
	writeAPIError(w, http.StatusBadRequest, apiError{
		Message: fmt.Sprintf("Unsupported parameter: '%s' is not supported with this model. Use '%s' instead.", field, instead),
		Type:    "invalid_request_error",
		Param:   field,
		Code:    "unsupported_parameter",
	})
}

func (s *Server) write(w http.ResponseWriter, r *http.Request, chat openai.ChatCompletionRequest, resp Response, id string) {
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
		s.writeStream(w, r, chat, resp, id)
	case resp.malformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"`+id+`","choices":[{"message":{"role":"assistant","content":"trunc`)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{
			ID:      id,
			Object:  "chat.completion",
			Created: time.Now().Unix(),
			Model:   s.models.answering(chat.Model, s.model),
			Choices: []openai.ChatCompletionChoice{{
				Index:        0,
				Message:      resp.message(),
				FinishReason: resp.finish(),
			}},
			Usage: resp.usageOrDefault(),
		})
	}
}

// modelSet is the models a server has (WithModels, WithEmbeddingModels);
// nil: it answers for any model.
type modelSet []string

// serves reports whether the server answers for model.
func (m modelSet) serves(model string) bool {
	return m == nil || slices.Contains(m, model)
}

// answering is the model an answer names: the one asked for when the
// server lists its models, else fallback (WithModel's).
func (m modelSet) answering(asked, fallback string) string {
	if m != nil {
		return asked
	}
	return fallback
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r.Header.Get("Authorization")) {
		return
	}
	names := s.models
	if names == nil {
		names = []string{s.model}
	}
	data := make([]map[string]any, 0, len(names))
	for _, n := range names {
		data = append(data, map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "llmtest"})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// apiError is the "error" object of an OpenAI error body.
type apiError struct {
	Message string
	Type    string
	Param   string // "": null
	Code    string // "": null
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg, errType string) {
	if errType == "" {
		errType = "server_error"
		if status < 500 {
			errType = "invalid_request_error"
		}
	}
	writeAPIError(w, status, apiError{Message: msg, Type: errType})
}

// writeAPIError writes e as an OpenAI error body; a missing param or code
// is null, as OpenAI sends it.
func writeAPIError(w http.ResponseWriter, status int, e apiError) {
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": null(e.Param), "code": null(e.Code),
	}})
}
