package llm_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

type imagerBundle struct {
	srv    *llmtest.Server
	im     *llm.Imager
	sleeps *sleepRecorder
	logs   *syncBuffer
}

// setupImager starts a fake server and an imager for it whose retry
// waits are recorded instead of slept; tweak adjusts the config.
func setupImager(t *testing.T, opts []llmtest.Option, tweak ...func(*llm.ImagerConfig)) imagerBundle {
	t.Helper()
	srv := llmtest.NewServer(t, opts...)
	sleeps, logs := &sleepRecorder{}, &syncBuffer{}
	cfg := llm.ImagerConfig{
		ServiceConfig: llm.ServiceConfig{BaseURL: srv.URL(), APIKey: apiKey, Model: "dall-e-3",
			Sleep: sleeps.sleep, Logger: newLogger(logs)},
		Size: "1024x1024",
	}
	for _, f := range tweak {
		f(&cfg)
	}
	im, err := llm.NewImager(cfg)
	require.NoError(t, err)
	return imagerBundle{srv: srv, im: im, sleeps: sleeps, logs: logs}
}

func TestGenerateImageReturnsThePicture(t *testing.T) {
	t.Parallel()
	b := setupImager(t, nil)
	b.srv.Images.Respond(llmtest.Generates)

	cat, mime, err := b.im.GenerateImage(context.Background(), "a cat on a mat")
	require.NoError(t, err)
	require.Equal(t, "image/png", mime)
	require.Equal(t, llmtest.PNGFor("a cat on a mat"), cat)
	dog, _, err := b.im.GenerateImage(context.Background(), "a dog")
	require.NoError(t, err)
	require.Equal(t, llmtest.PNGFor("a dog"), dog)
	require.NotEqual(t, cat, dog)

	require.Equal(t, []llmtest.ImageRequest{
		{Model: "dall-e-3", Prompt: "a cat on a mat", N: 1, Size: "1024x1024", ResponseFormat: "b64_json", Authorization: "Bearer " + apiKey},
		{Model: "dall-e-3", Prompt: "a dog", N: 1, Size: "1024x1024", ResponseFormat: "b64_json", Authorization: "Bearer " + apiKey},
	}, b.srv.Images.Requests())
}

// GPT Image models refuse response_format (the fake, as OpenAI, answers
// 400) and answer b64_json anyway.
func TestGenerateImageGPTImageSendsNoFormat(t *testing.T) {
	t.Parallel()
	b := setupImager(t, nil, func(c *llm.ImagerConfig) { c.Model, c.Size = "gpt-image-1", "" })
	b.srv.Images.Enqueue(llmtest.Generated())
	pic, _, err := b.im.GenerateImage(context.Background(), "a fox")
	require.NoError(t, err)
	require.Equal(t, llmtest.PNGFor("a fox"), pic)
	require.Equal(t, []llmtest.ImageRequest{{Model: "gpt-image-1", Prompt: "a fox", N: 1, Authorization: "Bearer " + apiKey}},
		b.srv.Images.Requests())
}

func TestGenerateImageTakesJPEG(t *testing.T) {
	t.Parallel()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	img.Set(1, 1, color.RGBA{G: 255, A: 255})
	var buf bytes.Buffer
	require.NoError(t, jpeg.Encode(&buf, img, nil))
	b := setupImager(t, nil)
	b.srv.Images.Enqueue(llmtest.ImageBytes(buf.Bytes()))
	pic, mime, err := b.im.GenerateImage(context.Background(), "green dot")
	require.NoError(t, err)
	require.Equal(t, "image/jpeg", mime)
	require.Equal(t, buf.Bytes(), pic)
}

func TestGenerateImageRefusesGarbage(t *testing.T) {
	t.Parallel()
	png := llmtest.PNGFor("x")
	for name, tc := range map[string]struct {
		answer llmtest.MediaResponse
		want   string
	}{
		"garbage": {llmtest.ImageBytes([]byte("garbage!")),
			"llm: image generation: the answer is not an image (8 bytes): image: unknown format"},
		"cut short": {llmtest.ImageBytes(png[:len(png)-10]),
			"llm: image generation: the png image does not decode (" + strconv.Itoa(len(png)-10) + " bytes): unexpected EOF"},
		"empty":          {llmtest.ImageBytes(nil), "llm: image generation: no b64_json image in the answer"},
		"malformed json": {llmtest.ImageMalformed(), "llm: image generation: malformed response: unexpected EOF"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupImager(t, nil)
			b.srv.Images.Enqueue(tc.answer)
			_, _, err := b.im.GenerateImage(context.Background(), "a cat")
			e := requireLLMError(t, err, tc.want)
			require.Equal(t, http.StatusOK, e.StatusCode)
			require.Len(t, b.srv.Images.Requests(), 1)
		})
	}
}

func TestGenerateImageBoundsThePicture(t *testing.T) {
	t.Parallel()
	png := llmtest.PNGFor("big")
	b := setupImager(t, nil, func(c *llm.ImagerConfig) { c.MaxBytes = int64(len(png)) - 1 })
	b.srv.Images.Enqueue(llmtest.Generated())
	_, _, err := b.im.GenerateImage(context.Background(), "big")
	requireLLMError(t, err, "llm: image generation: answer too large: image over "+strconv.Itoa(len(png)-1)+" bytes")

	// A body far past the bound is cut off while it is read.
	b = setupImager(t, nil, func(c *llm.ImagerConfig) { c.MaxBytes = 1024 })
	b.srv.Images.Enqueue(llmtest.ImageBytes(bytes.Repeat([]byte{1}, 200<<10)))
	_, _, err = b.im.GenerateImage(context.Background(), "huge")
	requireLLMError(t, err, "llm: image generation: answer too large")
}

func TestGenerateImageErrors(t *testing.T) {
	t.Parallel()
	b := setupImager(t, nil, func(c *llm.ImagerConfig) { c.MaxRetries = 1 })
	b.srv.Images.Enqueue(llmtest.MediaStatus(http.StatusBadRequest).WithErrorMessage("Your request was rejected by the safety system."))
	_, _, err := b.im.GenerateImage(context.Background(), "something")
	e := requireLLMError(t, err, "llm: image generation: 400 Bad Request: Your request was rejected by the safety system.")
	require.False(t, e.Retryable)

	b.srv.Images.Enqueue(llmtest.MediaStatus(http.StatusInternalServerError), llmtest.Generated())
	_, _, err = b.im.GenerateImage(context.Background(), "again")
	require.NoError(t, err, "a 500 is retried")
	require.Len(t, b.sleeps.all(), 1)
}

func TestGenerateImageTimesOut(t *testing.T) {
	t.Parallel()
	b := setupImager(t, nil, func(c *llm.ImagerConfig) { c.Timeout = 50 * time.Millisecond })
	b.srv.Images.Enqueue(llmtest.Generated().WithDelay(time.Minute))
	_, _, err := b.im.GenerateImage(context.Background(), "slow")
	e := requireLLMError(t, err, "llm: image generation: request timed out (timeout 50ms)")
	require.True(t, e.Timeout)
}

func TestGenerateImageTimesOutMidAnswer(t *testing.T) {
	t.Parallel()
	b := setupImager(t, nil, func(c *llm.ImagerConfig) { c.Timeout = 100 * time.Millisecond })
	b.srv.Images.Enqueue(llmtest.Generated().WithStall(time.Minute))
	_, _, err := b.im.GenerateImage(context.Background(), "slow")
	e := requireLLMError(t, err, "llm: image generation: request timed out (timeout 100ms)")
	require.True(t, e.Timeout)
}

func TestGenerateImageUnauthorizedHidesKey(t *testing.T) {
	t.Parallel()
	b := setupImager(t, []llmtest.Option{llmtest.WithAPIKey("sk-right-0123456789wxyz")})
	b.srv.Images.Enqueue(llmtest.Generated())
	_, _, err := b.im.GenerateImage(context.Background(), "a cat")
	e := requireLLMError(t, err, "llm: image generation: 401 Unauthorized: Incorrect API key provided: sk-...cdef. "+
		"You can find your API key at https://platform.openai.com/account/api-keys.")
	require.Equal(t, http.StatusUnauthorized, e.StatusCode)
	require.NotContains(t, b.logs.String(), apiKey)
}

func TestGenerateImageRefusesWhatCannotBeSent(t *testing.T) {
	t.Parallel()
	b := setupImager(t, nil)
	_, _, err := b.im.GenerateImage(context.Background(), "  ")
	requireLLMError(t, err, "llm: image generation: no prompt")
	require.Empty(t, b.srv.Images.Requests())
	_, err = llm.NewImager(llm.ImagerConfig{ServiceConfig: llm.ServiceConfig{BaseURL: "http://localhost:1/v1"}})
	require.EqualError(t, err, "llm: image generation: no model")
}
