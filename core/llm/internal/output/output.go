// Package output checks what the speech, image and embeddings endpoints
// send back before it goes to a user or a store: that it is the audio,
// image or vectors asked for, whole, and no larger than allowed.
package output

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // decoders for image.Decode
	_ "image/jpeg" //
	_ "image/png"  //
	"io"
	"mime"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	_ "golang.org/x/image/webp" // gpt-image models may answer in webp

	"github.com/parleybot/parley/core/llm/internal/ogg"
)

// ErrAnswer is in the chain of every error of the checks: the server
// answered, but not with what was asked for.
var ErrAnswer = errors.New("bad answer")

// ErrTooLarge is the error of an answer past its cap.
var ErrTooLarge = &answerError{msg: "answer too large"}

// answerError is an ErrAnswer with a message of its own.
type answerError struct {
	msg string
	err error
}

func (e *answerError) Error() string        { return e.msg }
func (e *answerError) Unwrap() error        { return e.err }
func (e *answerError) Is(target error) bool { return target == ErrAnswer }

// bad is an ErrAnswer saying what fmt.Errorf(format, args...) says, and
// keeping its chain.
func bad(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &answerError{msg: err.Error(), err: errors.Unwrap(err)}
}

// Speech reads an Ogg Opus answer of at most max bytes and checks it: an
// audio Content-Type (or application/ogg, or application/octet-stream,
// which some servers send for every file) and a whole Ogg Opus stream.
func Speech(body io.Reader, contentType string, size, max int64) ([]byte, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if !strings.HasPrefix(mt, "audio/") && mt != "application/ogg" && mt != "application/octet-stream" {
		return nil, bad("the answer is %q, not audio", contentType)
	}
	b, err := readAll(body, size, max)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%w: audio over %d bytes", ErrTooLarge, max)
	}
	if err := ogg.CheckOpus(b); err != nil {
		return nil, bad("the answer is not Ogg Opus audio (%d bytes): %w", len(b), err)
	}
	return b, nil
}

// maxPixels refuses an image whose header promises more pixels than any
// image model makes, before decoding it (a small file can declare a huge
// image).
const maxPixels = 64 << 20

// Image decodes the first image of a b64_json answer, of at most max
// bytes, and checks that it decodes whole as PNG, JPEG, WebP or GIF; it
// returns the bytes and their MIME type.
func Image(data []openai.ImageResponseDataInner, max int64) ([]byte, string, error) {
	if len(data) == 0 || data[0].B64JSON == "" {
		return nil, "", bad("no b64_json image in the answer")
	}
	b64 := data[0].B64JSON
	if int64(base64.StdEncoding.DecodedLen(len(b64))) > max+2 {
		return nil, "", fmt.Errorf("%w: image over %d bytes", ErrTooLarge, max)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, "", bad("the image is not base64: %w", err)
	}
	if int64(len(b)) > max {
		return nil, "", fmt.Errorf("%w: image over %d bytes", ErrTooLarge, max)
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, "", bad("the answer is not an image (%d bytes): %w", len(b), err)
	}
	if cfg.Width*cfg.Height > maxPixels {
		return nil, "", bad("the image is %dx%d, over %d pixels", cfg.Width, cfg.Height, maxPixels)
	}
	if _, _, err := image.Decode(bytes.NewReader(b)); err != nil {
		return nil, "", bad("the %s image does not decode (%d bytes): %w", format, len(b), err)
	}
	return b, "image/" + format, nil
}

// capKey is the context key of a body's cap (WithCap).
type capKey struct{}

// WithCap asks CapDoer to cut the answers to requests made with ctx at
// max bytes.
func WithCap(ctx context.Context, max int64) context.Context {
	return context.WithValue(ctx, capKey{}, max)
}

// CapDoer sends requests through Next and cuts their answers at the cap
// their context carries (WithCap): reading past it fails with ErrTooLarge.
type CapDoer struct{ Next openai.HTTPDoer }

// Do sends req.
func (d CapDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.Next.Do(req)
	if max, ok := req.Context().Value(capKey{}).(int64); ok && err == nil {
		resp.Body = &capped{ReadCloser: resp.Body, left: max}
	}
	return resp, err
}

type capped struct {
	io.ReadCloser
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	// One byte more than is left tells a body of exactly the cap from a
	// longer one.
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.ReadCloser.Read(p)
	if int64(n) > c.left {
		return 0, ErrTooLarge
	}
	c.left -= int64(n)
	return n, err
}

// readAll reads body, at most max+1 bytes. A size the server announced
// (Content-Length; -1 or 0: unknown) is read into one buffer of that
// size: the audio is then held once, not grown by copies to twice it.
func readAll(body io.Reader, size, max int64) ([]byte, error) {
	if size <= 0 || size > max {
		return io.ReadAll(io.LimitReader(body, max+1))
	}
	// One byte more, to see a body longer than announced.
	b := make([]byte, 0, size+1)
	for {
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			// Longer than announced: go on the slow way, up to max.
			rest, err := io.ReadAll(io.LimitReader(body, max+1-int64(len(b))))
			return append(b, rest...), err
		}
	}
}
