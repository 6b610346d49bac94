package llmtest

import (
	"net/http"
	"strconv"
	"time"
)

// MediaResponse is one scripted answer of the speech or image endpoint.
// Build one with Generated, AudioBytes, ImageBytes, ImageMalformed or
// MediaStatus and refine it with the With methods; every With returns a
// modified copy.
type MediaResponse struct {
	status      int
	message     string
	retryAfter  string
	delay       time.Duration
	stall       time.Duration // WithStall
	body        []byte        // AudioBytes, ImageBytes: sent instead of what the fake makes
	contentType string        // AudioBytes
	own         bool          // body is set
	malformed   bool
}

// Generated answers 200 with what the fake makes for the request: for
// speech, the Ogg Opus stream OggOpus(input); for an image, b64_json of the
// PNG PNGFor(prompt).
func Generated() MediaResponse {
	return MediaResponse{status: http.StatusOK}
}

// Generates is a responder answering every request with Generated, for
// Endpoint.Respond: a speech or image model that always works.
func Generates[Req any](Req) MediaResponse { return Generated() }

// AudioBytes answers a speech request 200 with body verbatim and the given
// Content-Type: garbage, an mp3, a stream cut short.
func AudioBytes(contentType string, body []byte) MediaResponse {
	return MediaResponse{status: http.StatusOK, body: body, contentType: contentType, own: true}
}

// ImageBytes answers an image request 200 with b64_json of body: garbage,
// an image cut short, a JPEG.
func ImageBytes(body []byte) MediaResponse {
	return MediaResponse{status: http.StatusOK, body: body, own: true}
}

// ImageMalformed answers an image request 200 with JSON cut short.
func ImageMalformed() MediaResponse {
	return MediaResponse{status: http.StatusOK, malformed: true}
}

// MediaStatus answers with an HTTP error status and an OpenAI-style error
// body.
func MediaStatus(code int) MediaResponse {
	return MediaResponse{status: code}
}

// WithErrorMessage sets the error message of a MediaStatus answer.
func (r MediaResponse) WithErrorMessage(msg string) MediaResponse {
	r.message = msg
	return r
}

// WithRetryAfter sets the Retry-After header (delta-seconds or HTTP-date).
func (r MediaResponse) WithRetryAfter(v string) MediaResponse {
	r.retryAfter = v
	return r
}

// WithDelay makes the server wait d before answering (on top of
// WithLatency), or until the client gives up.
func (r MediaResponse) WithDelay(d time.Duration) MediaResponse {
	r.delay = d
	return r
}

// WithStall makes the server send the headers and the first half of the
// body, then wait d (or until the client gives up) before the rest: a
// server that stops in the middle of an answer.
func (r MediaResponse) WithStall(d time.Duration) MediaResponse {
	r.stall = d
	return r
}

// writeMedia writes a 200's body, stalling midway as resp says.
func writeMedia(s *Server, w http.ResponseWriter, r *http.Request, resp MediaResponse, body []byte) {
	if resp.stall > 0 {
		half := len(body) / 2
		_, _ = w.Write(body[:half])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		if !s.wait(r, resp.stall) {
			return
		}
		body = body[half:]
	} else {
		// A whole answer says its length, as Kokoro-FastAPI's does; a
		// stalled one goes chunked.
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	_, _ = w.Write(body)
}

// answerMedia waits out the latency and the answer's delay, then writes the
// headers and, for an error status, the body; it reports whether the
// caller is to write a 200's body.
func answerMedia(s *Server, w http.ResponseWriter, r *http.Request, resp MediaResponse) bool {
	for _, d := range []time.Duration{s.latency, resp.delay} {
		if !s.wait(r, d) {
			return false
		}
	}
	if resp.retryAfter != "" {
		w.Header().Set("Retry-After", resp.retryAfter)
	}
	if resp.status != http.StatusOK {
		msg := resp.message
		if msg == "" {
			msg = "llmtest: scripted status " + strconv.Itoa(resp.status)
		}
		writeError(w, resp.status, msg, "")
		return false
	}
	return true
}
