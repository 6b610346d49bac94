package llm_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// oggBytes stands in for a voice note: the fake does not decode audio, and
// the transcriber must send it untouched.
var oggBytes = []byte("OggS\x00\x02 fake opus voice note \x00\xff")

type transcriberBundle struct {
	srv    *llmtest.Server
	tr     *llm.Transcriber
	sleeps *sleepRecorder
	logs   *syncBuffer
}

// setupTranscriber starts a fake server and a transcriber for it whose retry
// waits are recorded instead of slept; tweak adjusts the config.
func setupTranscriber(t *testing.T, opts []llmtest.Option, tweak ...func(*llm.TranscriberConfig)) transcriberBundle {
	t.Helper()
	srv := llmtest.NewServer(t, opts...)
	sleeps := &sleepRecorder{}
	logs := &syncBuffer{}
	cfg := llm.TranscriberConfig{
		BaseURL: srv.URL(),
		APIKey:  apiKey,
		Model:   "whisper-1",
		Sleep:   sleeps.sleep,
		Logger:  newLogger(logs),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	tr, err := llm.NewTranscriber(cfg)
	require.NoError(t, err)
	return transcriberBundle{srv: srv, tr: tr, sleeps: sleeps, logs: logs}
}

func TestTranscribeSendsFileAndModel(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, nil)
	b.srv.EnqueueTranscription(llmtest.Transcript(" hello there\n"))

	text, err := b.tr.Transcribe(context.Background(), "voice.ogg", oggBytes)
	require.NoError(t, err)
	require.Equal(t, "hello there", text)

	reqs := b.srv.TranscriptionRequests()
	require.Len(t, reqs, 1)
	require.Equal(t, llmtest.TranscriptionRequest{
		Model:          "whisper-1",
		FileName:       "voice.ogg",
		ContentType:    "audio/ogg",
		File:           oggBytes,
		ResponseFormat: "json",
		Authorization:  "Bearer " + apiKey,
	}, reqs[0])
	require.Empty(t, b.srv.Requests(), "no chat request")
}

func TestTranscribeKeepsFormatByName(t *testing.T) {
	t.Parallel()
	for name, contentType := range map[string]string{
		"audio.mp3": "audio/mpeg",
		"clip.m4a":  "audio/mp4",
		"x.wav":     "audio/wav",
		"x.webm":    "audio/webm",
		"x.OGA":     "audio/ogg",
		"x.bin":     "application/octet-stream",
		"recording": "application/octet-stream",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupTranscriber(t, nil)
			b.srv.EnqueueTranscription(llmtest.Transcript("ok"))
			_, err := b.tr.Transcribe(context.Background(), name, oggBytes)
			require.NoError(t, err)
			got := b.srv.TranscriptionRequests()[0]
			require.Equal(t, name, got.FileName)
			require.Equal(t, contentType, got.ContentType)
			require.Equal(t, oggBytes, got.File)
		})
	}
}

func TestTranscribeEmptyTranscriptIsNotAnError(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, nil)
	b.srv.EnqueueTranscription(llmtest.Transcript("  "))
	text, err := b.tr.Transcribe(context.Background(), "voice.ogg", oggBytes)
	require.NoError(t, err)
	require.Empty(t, text)
}

func TestTranscribeRetriesServerErrors(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, nil)
	b.srv.EnqueueTranscription(
		llmtest.TranscriptionStatus(http.StatusInternalServerError),
		llmtest.TranscriptionStatus(http.StatusTooManyRequests).WithRetryAfter("7"),
		llmtest.Transcript("made it"),
	)
	text, err := b.tr.Transcribe(context.Background(), "voice.ogg", oggBytes)
	require.NoError(t, err)
	require.Equal(t, "made it", text)

	delays := b.sleeps.all()
	require.Len(t, delays, 2)
	require.Equal(t, 7*time.Second, delays[1], "Retry-After is honoured")
	reqs := b.srv.TranscriptionRequests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		require.Equal(t, oggBytes, r.File, "every attempt sends the whole file")
	}
	require.Contains(t, b.logs.String(), "status=500")
}

func TestTranscribeGivesUpAfterRetries(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, nil, func(c *llm.TranscriberConfig) { c.MaxRetries = 1 })
	_, err := b.tr.Transcribe(context.Background(), "voice.ogg", oggBytes)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusInternalServerError, e.StatusCode)
	require.True(t, e.Retryable)
	require.Equal(t, "llm: transcription: 500 Internal Server Error after 2 attempts: llmtest: no scripted transcription", e.Message)
	require.Len(t, b.srv.TranscriptionRequests(), 2)
}

func TestTranscribeUnauthorizedHidesKey(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, []llmtest.Option{llmtest.WithAPIKey("sk-right-0123456789wxyz")},
		func(c *llm.TranscriberConfig) { c.AuthHint = "check llm.transcription.api_key" })
	b.srv.EnqueueTranscription(llmtest.Transcript("never"))

	_, err := b.tr.Transcribe(context.Background(), "voice.ogg", oggBytes)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, http.StatusUnauthorized, e.StatusCode)
	require.False(t, e.Retryable)
	require.Contains(t, e.Message, "llm: transcription: 401 Unauthorized")
	require.Contains(t, e.Message, "; check llm.transcription.api_key")
	require.NotContains(t, err.Error(), apiKey)
	for u := error(e); u != nil; u = unwrap(u) {
		require.NotContains(t, u.Error(), apiKey)
	}
	require.NotContains(t, b.logs.String(), apiKey)
	require.Len(t, b.srv.TranscriptionRequests(), 1, "401 is not retried")
	require.Equal(t, 1, b.srv.PendingTranscriptions(), "a refused request takes no scripted answer")
}

// unwrap is errors.Unwrap for a single-cause chain.
func unwrap(err error) error {
	u, ok := err.(interface{ Unwrap() error })
	if !ok {
		return nil
	}
	return u.Unwrap()
}

func TestTranscribeRefusesWhatCannotBeSent(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, nil)
	_, err := b.tr.Transcribe(context.Background(), "voice.ogg", nil)
	require.ErrorContains(t, err, "no audio")
	_, err = b.tr.Transcribe(context.Background(), "", oggBytes)
	require.ErrorContains(t, err, "no file name")
	require.Empty(t, b.srv.TranscriptionRequests())
}

func TestTranscribeCanceled(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.tr.Transcribe(ctx, "voice.ogg", oggBytes)
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.ErrorIs(t, err, context.Canceled)
}

func TestNewTranscriberValidates(t *testing.T) {
	t.Parallel()
	_, err := llm.NewTranscriber(llm.TranscriberConfig{BaseURL: "http://localhost:8080/v1"})
	require.ErrorContains(t, err, "no model")
	_, err = llm.NewTranscriber(llm.TranscriberConfig{BaseURL: "ftp://user:hunter2@example.com", Model: "whisper-1"})
	require.ErrorContains(t, err, "base url")
	require.NotContains(t, err.Error(), "hunter2")
	_, err = llm.NewTranscriber(llm.TranscriberConfig{BaseURL: "http://localhost:8080/v1", Model: "whisper-1", Timeout: -time.Second})
	require.Error(t, err)
}
