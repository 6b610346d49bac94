package llm

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TranscriberConfig configures a Transcriber. Zero fields take the same
// defaults as the matching Config fields.
type TranscriberConfig struct {
	// BaseURL is the server's API root, e.g. https://api.openai.com/v1
	// (required, http or https); audio goes to {BaseURL}/audio/transcriptions.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" (optional). It never
	// appears in errors or logs.
	APIKey string
	// Model is the transcription model, e.g. whisper-1 (required).
	Model string
	// Timeout bounds each HTTP attempt, upload and answer included
	// (default 60s).
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt (429, 5xx, connection
	// error) is retried after the first (default 3; NoRetries disables).
	MaxRetries int
	// HTTPClient sends the requests (default: the pooled client Config
	// uses). Its Transport is wrapped with the retrying transport; the
	// value passed in is not modified.
	HTTPClient *http.Client
	// Logger receives retry warnings (default slog.Default()).
	Logger *slog.Logger
	// AuthHint ends the message of a 401 or 403 error, e.g. "check
	// llm.transcription.api_key". It must not hold the key.
	AuthHint string
	// Sleep waits between attempts, as Config.Sleep (default: a timer).
	// Tests inject it to observe delays without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// ShareLimits, when set, is the Client whose limits transcriptions keep
	// to, for a transcriber on the same server: each counts against its
	// MaxConcurrency, waits out the pause a 429 imposes and, if it gets a
	// 429 itself, pauses the client's requests too. They are not charged
	// to its per-minute budgets: providers meter each model on its own,
	// and those are the chat model's. Unset, the transcriber has limits
	// of its own (a 429 pauses only transcriptions).
	ShareLimits *Client
}

// Transcriber turns voice notes and audio into text through an
// OpenAI-compatible transcription endpoint. It shares the Client's retrying
// transport and error handling. It is safe for concurrent use.
type Transcriber struct {
	conn
}

// NewTranscriber validates cfg, applies defaults and builds a Transcriber.
func NewTranscriber(cfg TranscriberConfig) (*Transcriber, error) {
	cn, err := serviceConn(opTranscription, cfg)
	if err != nil {
		return nil, err
	}
	return &Transcriber{conn: cn}, nil
}

// opTranscription names the call in error messages.
const opTranscription = "transcription"

// Transcribe sends the audio, as received, to the transcription endpoint
// and returns the transcript with surrounding space trimmed. name is the
// file's name, e.g. voice.ogg: OpenAI infers the format from its extension
// (ogg/opus, mp3, m4a, wav, webm...), so it should have one (a name without
// is sent as it is: servers that decode with ffmpeg need none). An
// empty transcript (silence) is "" with no error: what to tell the user is
// the caller's choice. A failure is an *Error, as the Client's are, retried
// on 429 and 5xx the same way and never showing the key.
func (t *Transcriber) Transcribe(ctx context.Context, name string, data []byte) (string, error) {
	if len(data) == 0 {
		return "", &Error{Message: "llm: transcription: no audio"}
	}
	if name == "" {
		return "", &Error{Message: "llm: transcription: no file name (the server infers the audio format from its extension)"}
	}
	actx, attempts := withAttempts(ctx)
	resp, err := t.api.CreateTranscription(actx, openai.AudioRequest{
		Model:    t.cfg.Model,
		FilePath: name,
		Reader:   audioReader{Reader: bytes.NewReader(data), contentType: audioContentType(name)},
		// json is what every OpenAI-compatible server takes (the
		// gpt-4o transcribe models take only json and text).
		Format: openai.AudioResponseFormatJSON,
	})
	if err != nil {
		return "", t.failAs(ctx, opTranscription, err, int(attempts.Load()))
	}
	return strings.TrimSpace(resp.Text), nil
}

// audioReader gives go-openai the file part's Content-Type, which it would
// otherwise look up in the system's MIME table (often without the audio
// types, leaving application/octet-stream).
type audioReader struct {
	*bytes.Reader
	contentType string
}

// ContentType is what go-openai asks the reader for.
func (r audioReader) ContentType() string { return r.contentType }

// audioContentType is the MIME type of the audio formats the transcription
// APIs take, by file extension.
func audioContentType(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".ogg", ".oga", ".opus":
		return "audio/ogg"
	case ".mp3", ".mpga", ".mpeg":
		return "audio/mpeg"
	case ".m4a", ".mp4":
		return "audio/mp4"
	case ".wav":
		return "audio/wav"
	case ".webm":
		return "audio/webm"
	case ".flac":
		return "audio/flac"
	default:
		return "application/octet-stream"
	}
}
