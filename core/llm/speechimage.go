package llm

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/parleybot/parley/core/llm/internal/output"
)

// Default bounds of the audio and images made, unless MaxBytes says
// otherwise: OpenAI's longest speech input (4,096 characters) is about
// five minutes, a megabyte or two of Opus; a 1536x1024 PNG, a few.
const (
	DefaultMaxSpeech = 16 << 20
	DefaultMaxImage  = 20 << 20
)

// SpeakerConfig configures a Speaker: ServiceConfig's fields, Model a
// text-to-speech model (e.g. gpt-4o-mini-tts, tts-1), and its own.
type SpeakerConfig struct {
	ServiceConfig
	// Voice is the voice spoken in, e.g. alloy (required).
	Voice string
	// MaxBytes bounds the audio (0 or less: DefaultMaxSpeech).
	MaxBytes int64
}

// Speaker turns text into speech through an OpenAI-compatible
// POST {base}/audio/speech, as Ogg Opus (what Telegram plays as a voice
// note). It shares the Client's retrying transport and error handling.
type Speaker struct {
	conn
	voice string
	max   int64
}

// NewSpeaker validates cfg, applies defaults and builds a Speaker.
func NewSpeaker(cfg SpeakerConfig) (*Speaker, error) {
	if cfg.Voice == "" {
		return nil, errors.New("llm: speech: no voice")
	}
	cn, err := serviceConn(opSpeech, cfg.ServiceConfig)
	if err != nil {
		return nil, err
	}
	return &Speaker{conn: cn, voice: cfg.Voice, max: cmp.Or(max(cfg.MaxBytes, 0), DefaultMaxSpeech)}, nil
}

// Names of the calls in error messages.
const (
	opSpeech = "speech"
	opImage  = "image generation"
)

// Speak says text and returns the Ogg Opus audio. The answer is checked
// first: an audio Content-Type, a whole Ogg stream beginning with
// OpusHead, at most MaxBytes; garbage is an *Error, as are the failures
// the Client reports (retried on 429 and 5xx alike, bounded by the
// timeout, never showing the key).
func (s *Speaker) Speak(ctx context.Context, text string) ([]byte, error) {
	if strings.TrimSpace(text) == "" {
		return nil, &Error{Message: "llm: speech: no text"}
	}
	actx, attempts := withAttempts(ctx)
	resp, err := s.api.CreateSpeech(actx, openai.CreateSpeechRequest{Model: openai.SpeechModel(s.cfg.Model),
		Input: text, Voice: openai.SpeechVoice(s.voice), ResponseFormat: openai.SpeechResponseFormatOpus})
	var audio []byte
	if err == nil {
		defer resp.Close()
		size, _ := strconv.ParseInt(resp.Header().Get("Content-Length"), 10, 64)
		audio, err = output.Speech(resp, resp.Header().Get("Content-Type"), size, s.max)
	}
	if err != nil {
		return nil, s.failAs(ctx, opSpeech, err, int(attempts.Load()))
	}
	return audio, nil
}

// ImagerConfig configures an Imager: ServiceConfig's fields, Model an
// image model (e.g. gpt-image-1, dall-e-3), and its own.
type ImagerConfig struct {
	ServiceConfig
	// Size is the size asked for, e.g. 1024x1024 ("": the model's default).
	Size string
	// MaxBytes bounds the image (0 or less: DefaultMaxImage).
	MaxBytes int64
}

// Imager draws pictures through an OpenAI-compatible
// POST {base}/images/generations. It shares the Client's retrying
// transport and error handling.
type Imager struct {
	conn
	size string
	max  int64
}

// NewImager validates cfg, applies defaults and builds an Imager.
func NewImager(cfg ImagerConfig) (*Imager, error) {
	cn, err := serviceConn(opImage, cfg.ServiceConfig)
	if err != nil {
		return nil, err
	}
	return &Imager{conn: cn, size: cfg.Size, max: cmp.Or(max(cfg.MaxBytes, 0), DefaultMaxImage)}, nil
}

// GenerateImage draws prompt and returns the image and its MIME type
// (image/png unless the server chose another). The answer is checked
// first: base64 that decodes whole as an image, at most MaxBytes; garbage
// is an *Error, as are the failures the Client reports.
func (m *Imager) GenerateImage(ctx context.Context, prompt string) ([]byte, string, error) {
	if strings.TrimSpace(prompt) == "" {
		return nil, "", &Error{Message: "llm: image generation: no prompt"}
	}
	req := openai.ImageRequest{Model: m.cfg.Model, Prompt: prompt, N: 1, Size: m.size,
		ResponseFormat: openai.CreateImageResponseFormatB64JSON}
	if strings.HasPrefix(m.cfg.Model, "gpt-image") || strings.HasPrefix(m.cfg.Model, "chatgpt-image") {
		req.ResponseFormat = "" // GPT Image models answer b64_json only, and refuse the field
	}
	// The body is the image in base64 (4/3 of it) in a little JSON.
	actx, attempts := withAttempts(output.WithCap(ctx, m.max/3*4+64<<10))
	resp, err := m.api.CreateImage(actx, req)
	var img []byte
	var mime string
	if err == nil {
		img, mime, err = output.Image(resp.Data, m.max)
	}
	if err != nil {
		return nil, "", m.failAs(ctx, opImage, err, int(attempts.Load()))
	}
	return img, mime, nil
}
