package llm_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

type speakerBundle struct {
	srv    *llmtest.Server
	sp     *llm.Speaker
	sleeps *sleepRecorder
	logs   *syncBuffer
}

// setupSpeaker starts a fake server and a speaker for it whose retry
// waits are recorded instead of slept; tweak adjusts the config.
func setupSpeaker(t testing.TB, opts []llmtest.Option, tweak ...func(*llm.SpeakerConfig)) speakerBundle {
	t.Helper()
	srv := llmtest.NewServer(t, opts...)
	sleeps, logs := &sleepRecorder{}, &syncBuffer{}
	cfg := llm.SpeakerConfig{
		ServiceConfig: llm.ServiceConfig{BaseURL: srv.URL(), APIKey: apiKey, Model: "gpt-4o-mini-tts",
			Sleep: sleeps.sleep, Logger: newLogger(logs)},
		Voice: "coral",
	}
	for _, f := range tweak {
		f(&cfg)
	}
	sp, err := llm.NewSpeaker(cfg)
	require.NoError(t, err)
	return speakerBundle{srv: srv, sp: sp, sleeps: sleeps, logs: logs}
}

// requireLLMError asserts err is an *llm.Error with message want, in which
// nothing down its chain shows the API key.
func requireLLMError(t *testing.T, err error, want string) *llm.Error {
	t.Helper()
	var e *llm.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, want, e.Message)
	for u := err; u != nil; u = unwrap(u) {
		require.NotContains(t, u.Error(), apiKey)
	}
	return e
}

func TestSpeakReturnsOggOpus(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, nil)
	b.srv.Speech.Enqueue(llmtest.Generated())

	audio, err := b.sp.Speak(context.Background(), "Your table is booked for eight.")
	require.NoError(t, err)
	require.Equal(t, llmtest.OggOpus("Your table is booked for eight."), audio)
	require.Equal(t, []llmtest.SpeechRequest{{
		Model: "gpt-4o-mini-tts", Input: "Your table is booked for eight.", Voice: "coral", ResponseFormat: "opus",
		Authorization: "Bearer " + apiKey,
	}}, b.srv.Speech.Requests())
}

func TestSpeakAcceptsAudioTypes(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, nil)
	ogg := llmtest.OggOpus("hi")
	for _, ct := range []string{"audio/ogg", "audio/ogg; codecs=opus", "application/ogg", "application/octet-stream"} {
		b.srv.Speech.Enqueue(llmtest.AudioBytes(ct, ogg))
		audio, err := b.sp.Speak(context.Background(), "hi")
		require.NoError(t, err, ct)
		require.Equal(t, ogg, audio)
	}
}

func TestSpeakRefusesWhatIsNotOggOpus(t *testing.T) {
	t.Parallel()
	ogg := llmtest.OggOpus("hi")
	for name, tc := range map[string]struct {
		answer llmtest.MediaResponse
		want   string
	}{
		"garbage": {llmtest.AudioBytes("audio/ogg", []byte("garbage")),
			`llm: speech: the answer is not Ogg Opus audio (7 bytes): ogg: page 0: does not start with "OggS"`},
		"mp3": {llmtest.AudioBytes("audio/mpeg", []byte("ID3\x04 an mp3")),
			`llm: speech: the answer is not Ogg Opus audio (11 bytes): ogg: page 0: does not start with "OggS"`},
		"cut short": {llmtest.AudioBytes("audio/ogg", ogg[:len(ogg)-1]),
			"llm: speech: the answer is not Ogg Opus audio (" + strconv.Itoa(len(ogg)-1) + " bytes): ogg: page 2: body cut short (5 of 6 bytes)"},
		"html": {llmtest.AudioBytes("text/html; charset=utf-8", []byte("<html>proxy error</html>")),
			`llm: speech: the answer is "text/html; charset=utf-8", not audio`},
		"json": {llmtest.AudioBytes("application/json", []byte(`{"audio": "..."}`)),
			`llm: speech: the answer is "application/json", not audio`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupSpeaker(t, nil)
			b.srv.Speech.Enqueue(tc.answer)
			_, err := b.sp.Speak(context.Background(), "hi")
			e := requireLLMError(t, err, tc.want)
			require.Equal(t, http.StatusOK, e.StatusCode)
			require.False(t, e.Retryable)
			require.Len(t, b.srv.Speech.Requests(), 1, "a bad answer is not asked again")
		})
	}
}

func TestSpeakBoundsTheAudio(t *testing.T) {
	t.Parallel()
	ogg := llmtest.OggOpus("hello")
	b := setupSpeaker(t, nil, func(c *llm.SpeakerConfig) { c.MaxBytes = int64(len(ogg)) - 1 })
	b.srv.Speech.Enqueue(llmtest.Generated())
	_, err := b.sp.Speak(context.Background(), "hello")
	requireLLMError(t, err, "llm: speech: answer too large: audio over "+strconv.Itoa(len(ogg)-1)+" bytes")

	b = setupSpeaker(t, nil, func(c *llm.SpeakerConfig) { c.MaxBytes = int64(len(ogg)) })
	b.srv.Speech.Enqueue(llmtest.Generated())
	_, err = b.sp.Speak(context.Background(), "hello")
	require.NoError(t, err, "exactly the bound")
}

func TestSpeakRetriesThenGivesUp(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, nil, func(c *llm.SpeakerConfig) { c.MaxRetries = 1 })
	b.srv.Speech.Enqueue(
		llmtest.MediaStatus(http.StatusTooManyRequests).WithRetryAfter("2"),
		llmtest.Generated(),
	)
	_, err := b.sp.Speak(context.Background(), "first")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{2 * time.Second}, b.sleeps.all())

	b.srv.Speech.Enqueue(llmtest.MediaStatus(http.StatusServiceUnavailable).WithErrorMessage("overloaded"))
	_, err = b.sp.Speak(context.Background(), "second")
	e := requireLLMError(t, err, "llm: speech: 500 Internal Server Error after 2 attempts: llmtest: no scripted speech")
	require.True(t, e.Retryable)
	require.Equal(t, http.StatusInternalServerError, e.StatusCode)
	require.Len(t, b.srv.Speech.Requests(), 4)
	require.Contains(t, b.logs.String(), "status=503")
}

func TestSpeakErrorStatus(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, nil)
	b.srv.Speech.Enqueue(llmtest.MediaStatus(http.StatusBadRequest).WithErrorMessage("Invalid voice"))
	_, err := b.sp.Speak(context.Background(), "hi")
	e := requireLLMError(t, err, "llm: speech: 400 Bad Request: Invalid voice")
	require.False(t, e.Retryable)
	require.Equal(t, http.StatusBadRequest, e.StatusCode)
}

func TestSpeakTimesOut(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, []llmtest.Option{llmtest.WithLatency(time.Minute)},
		func(c *llm.SpeakerConfig) { c.Timeout = 50 * time.Millisecond })
	b.srv.Speech.Enqueue(llmtest.Generated())
	start := time.Now()
	_, err := b.sp.Speak(context.Background(), "hi")
	e := requireLLMError(t, err, "llm: speech: request timed out (timeout 50ms)")
	require.True(t, e.Timeout)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Len(t, b.srv.Speech.Requests(), 1, "a timeout is not retried")
}

// A server that stops halfway through the audio is cut off by the same
// timeout.
func TestSpeakTimesOutMidAnswer(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, nil, func(c *llm.SpeakerConfig) { c.Timeout = 100 * time.Millisecond })
	b.srv.Speech.Enqueue(llmtest.Generated().WithStall(time.Minute))
	_, err := b.sp.Speak(context.Background(), "hi")
	e := requireLLMError(t, err, "llm: speech: request timed out (timeout 100ms)")
	require.True(t, e.Timeout)
}

func TestSpeakUnauthorizedHidesKey(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, []llmtest.Option{llmtest.WithAPIKey("sk-right-0123456789wxyz")},
		func(c *llm.SpeakerConfig) { c.AuthHint = "check voice.api_key" })
	b.srv.Speech.Enqueue(llmtest.Generated())
	_, err := b.sp.Speak(context.Background(), "hi")
	e := requireLLMError(t, err, "llm: speech: 401 Unauthorized: Incorrect API key provided: sk-...cdef. "+
		"You can find your API key at https://platform.openai.com/account/api-keys.; check voice.api_key")
	require.Equal(t, http.StatusUnauthorized, e.StatusCode)
	require.NotContains(t, b.logs.String(), apiKey)
	require.Equal(t, 1, b.srv.Speech.Pending())
}

func TestSpeakRefusesWhatCannotBeSent(t *testing.T) {
	t.Parallel()
	b := setupSpeaker(t, nil)
	_, err := b.sp.Speak(context.Background(), " \n")
	requireLLMError(t, err, "llm: speech: no text")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.sp.Speak(ctx, "hi")
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, b.srv.Speech.Requests())
}

func TestNewSpeakerValidates(t *testing.T) {
	t.Parallel()
	base := llm.ServiceConfig{BaseURL: "http://localhost:8080/v1", Model: "tts-1"}
	_, err := llm.NewSpeaker(llm.SpeakerConfig{ServiceConfig: base})
	require.EqualError(t, err, "llm: speech: no voice")
	noModel := base
	noModel.Model = ""
	_, err = llm.NewSpeaker(llm.SpeakerConfig{ServiceConfig: noModel, Voice: "alloy"})
	require.EqualError(t, err, "llm: speech: no model")
	bad := base
	bad.BaseURL = "ftp://user:hunter2@example.com"
	_, err = llm.NewSpeaker(llm.SpeakerConfig{ServiceConfig: bad, Voice: "alloy"})
	require.ErrorContains(t, err, "base url")
	require.NotContains(t, err.Error(), "hunter2")
}
