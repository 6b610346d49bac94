package llmtest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// TranscriptionRequest is one POST /audio/transcriptions the server received.
type TranscriptionRequest struct {
	// Model is the form's model field.
	Model string
	// FileName is the file part's file name, e.g. "voice.ogg".
	FileName string
	// ContentType is the file part's Content-Type header.
	ContentType string
	// File is the file part's bytes, as uploaded.
	File []byte
	// ResponseFormat is the form's response_format field ("" when absent:
	// json).
	ResponseFormat string
	// Authorization is the Authorization header as sent.
	Authorization string
}

// TranscriptionResponse is one scripted answer of the fake transcription
// model. Build one with Transcript or TranscriptionStatus and refine it with
// the With methods; every With returns a modified copy.
type TranscriptionResponse struct {
	status     int
	text       string
	message    string
	retryAfter string
	delay      time.Duration
}

// Transcript answers 200 with the transcript text ({"text": text} in json,
// the text itself when the request asks for response_format text).
func Transcript(text string) TranscriptionResponse {
	return TranscriptionResponse{status: http.StatusOK, text: text}
}

// TranscriptionStatus answers with an HTTP error status and an OpenAI-style
// error body.
func TranscriptionStatus(code int) TranscriptionResponse {
	return TranscriptionResponse{status: code}
}

// WithRetryAfter sets the Retry-After header (delta-seconds or HTTP-date).
func (r TranscriptionResponse) WithRetryAfter(v string) TranscriptionResponse {
	r.retryAfter = v
	return r
}

// WithErrorMessage sets the error message of a TranscriptionStatus response.
func (r TranscriptionResponse) WithErrorMessage(msg string) TranscriptionResponse {
	r.message = msg
	return r
}

// WithDelay makes the server wait d before answering, or until the client
// gives up.
func (r TranscriptionResponse) WithDelay(d time.Duration) TranscriptionResponse {
	r.delay = d
	return r
}

// WithTranscriber installs a transcription responder, used when the
// transcription queue is empty (see Server.RespondTranscription).
func WithTranscriber(f func(TranscriptionRequest) TranscriptionResponse) Option {
	return func(s *Server) { s.transcriber = f }
}

// EnqueueTranscription appends scripted transcription answers; each
// transcription request takes the next one. The queue is separate from the
// chat answers'.
func (s *Server) EnqueueTranscription(rs ...TranscriptionResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tqueue = append(s.tqueue, rs...)
}

// RespondTranscription sets the responder used when the transcription queue
// is empty; nil removes it.
func (s *Server) RespondTranscription(f func(TranscriptionRequest) TranscriptionResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcriber = f
}

// PendingTranscriptions returns how many scripted transcription answers
// have not been used yet.
func (s *Server) PendingTranscriptions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tqueue)
}

// TranscriptionRequests returns every transcription request received so
// far (those refused for their key included), in order of arrival.
func (s *Server) TranscriptionRequests() []TranscriptionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]TranscriptionRequest(nil), s.trequests...)
}

// maxAudioForm bounds the multipart form held in memory; OpenAI's own limit
// is 25 MB per file.
const maxAudioForm = 32 << 20

func (s *Server) handleTranscription(w http.ResponseWriter, r *http.Request) {
	req, err := readTranscriptionRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: "+err.Error(), "")
		return
	}
	if !s.authorized(w, req.Authorization) {
		s.mu.Lock()
		s.trequests = append(s.trequests, req)
		s.mu.Unlock()
		return
	}
	resp, responder := s.recordTranscription(req)
	if responder != nil {
		resp = responder(req)
	}
	for _, d := range []time.Duration{s.latency, resp.delay} {
		if !s.wait(r, d) {
			return
		}
	}
	if resp.retryAfter != "" {
		w.Header().Set("Retry-After", resp.retryAfter)
	}
	switch {
	case resp.status != http.StatusOK:
		msg := resp.message
		if msg == "" {
			msg = "llmtest: scripted status " + strconv.Itoa(resp.status)
		}
		writeError(w, resp.status, msg, "")
	case req.ResponseFormat == "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, resp.text)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"text": resp.text})
	}
}

// readTranscriptionRequest reads the multipart form the way OpenAI checks
// it: a file and a model are required.
func readTranscriptionRequest(r *http.Request) (TranscriptionRequest, error) {
	req := TranscriptionRequest{Authorization: r.Header.Get("Authorization")}
	if err := r.ParseMultipartForm(maxAudioForm); err != nil {
		return req, errors.New("reading multipart form: " + err.Error())
	}
	req.Model = r.FormValue("model")
	req.ResponseFormat = r.FormValue("response_format")
	f, h, err := r.FormFile("file")
	if err != nil {
		return req, errors.New("no file in the form: " + err.Error())
	}
	defer f.Close()
	if req.File, err = io.ReadAll(f); err != nil {
		return req, errors.New("reading file: " + err.Error())
	}
	req.FileName, req.ContentType = h.Filename, h.Header.Get("Content-Type")
	if req.Model == "" {
		return req, errors.New("no model in the form")
	}
	return req, nil
}

// recordTranscription stores a request and picks its answer: a scripted
// one, or the responder to call outside the lock.
func (s *Server) recordTranscription(req TranscriptionRequest) (TranscriptionResponse, func(TranscriptionRequest) TranscriptionResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trequests = append(s.trequests, req)
	if len(s.tqueue) > 0 {
		r := s.tqueue[0]
		s.tqueue = s.tqueue[1:]
		return r, nil
	}
	if s.transcriber != nil {
		return TranscriptionResponse{}, s.transcriber
	}
	return TranscriptionStatus(http.StatusInternalServerError).WithErrorMessage("llmtest: no scripted transcription"), nil
}
