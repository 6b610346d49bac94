package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ImageRequest is one POST /images/generations the server received.
type ImageRequest struct {
	Model          string `json:"model"` // "": OpenAI's default, dall-e-2
	Prompt         string `json:"prompt"`
	N              int    `json:"n"`
	Size           string `json:"size"`
	Quality        string `json:"quality"`
	ResponseFormat string `json:"response_format"`
	// Authorization is the Authorization header as sent.
	Authorization string `json:"-"`
}

// handleImages answers POST /images/generations as OpenAI does.
func handleImages(s *Server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req ImageRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, "llmtest: decoding request: "+err.Error(), "")
			return
		}
		req.Authorization = r.Header.Get("Authorization")
		if !s.authorized(w, req.Authorization) {
			s.Images.record(req)
			return
		}
		if e := refusedImage(req); e.Message != "" {
			s.Images.record(req)
			writeAPIError(w, http.StatusBadRequest, e)
			return
		}
		resp := s.Images.take(req)
		if !answerMedia(s, w, r, resp) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if resp.malformed {
			_, _ = io.WriteString(w, `{"created": 1, "data": [{"b64_json": "iVBORw0KGgo`)
			return
		}
		body := resp.body
		if !resp.own {
			body = PNGFor(req.Prompt)
		}
		item := map[string]string{"b64_json": base64.StdEncoding.EncodeToString(body)}
		if req.ResponseFormat == "url" {
			item = map[string]string{"url": "https://llmtest.invalid/images/" + strconv.Itoa(len(body)) + ".png"}
		}
		out, _ := json.Marshal(map[string]any{"created": time.Now().Unix(), "data": []any{item}})
		writeMedia(s, w, r, resp, out)
	}
}

// refusedImage is OpenAI's 400 for a request it would refuse, or a zero
// apiError.
func refusedImage(req ImageRequest) apiError {
	switch {
	case req.Prompt == "":
		return apiError{Message: "Missing required parameter: 'prompt'.", Type: "invalid_request_error", Param: "prompt"}
	case req.N < 0 || req.N > 1 && strings.HasPrefix(req.Model, "dall-e-3"):
		return apiError{Message: "Invalid 'n': the fake and dall-e-3 make one image.", Type: "invalid_request_error", Param: "n"}
	case req.ResponseFormat != "" && (strings.HasPrefix(req.Model, "gpt-image") || strings.HasPrefix(req.Model, "chatgpt-image")):
		return apiError{Message: "Unknown parameter: 'response_format'.", Type: "invalid_request_error",
			Param: "response_format", Code: "unknown_parameter"}
	case req.ResponseFormat != "" && req.ResponseFormat != "b64_json" && req.ResponseFormat != "url":
		return apiError{Message: "Invalid value: '" + req.ResponseFormat + "'. Supported values are: 'url' and 'b64_json'.",
			Type: "invalid_request_error", Param: "response_format", Code: "invalid_value"}
	}
	return apiError{}
}

// pngSide is the side of the fake's pictures, whatever size was asked for.
const pngSide = 16

// PNGFor is the picture the fake draws for prompt: a 16x16 PNG whose
// pixels are the SHA-256 of the prompt, so two prompts make two pictures
// and a test can tell which prompt a picture came from.
func PNGFor(prompt string) []byte {
	sum := sha256.Sum256([]byte(prompt))
	img := image.NewNRGBA(image.Rect(0, 0, pngSide, pngSide))
	for i := range pngSide * pngSide {
		img.Set(i%pngSide, i/pngSide, color.NRGBA{R: sum[i%32], G: sum[(i+1)%32], B: sum[(i+2)%32], A: 255})
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic("llmtest: encoding a PNG: " + err.Error()) // cannot fail on a buffer
	}
	return buf.Bytes()
}
