package llmtest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/png"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

func draw(ctx context.Context, client *openai.Client, model, prompt, format string) (openai.ImageResponse, error) {
	return client.CreateImage(ctx, openai.ImageRequest{Model: model, Prompt: prompt, N: 1, Size: "1024x1024", ResponseFormat: format})
}

func TestImagesDrawThePrompt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Images.Respond(llmtest.Generates)
	cat, err := draw(context.Background(), b.client, "dall-e-3", "a cat", openai.CreateImageResponseFormatB64JSON)
	require.NoError(t, err)
	require.Len(t, cat.Data, 1)
	pic, err := base64.StdEncoding.DecodeString(cat.Data[0].B64JSON)
	require.NoError(t, err)
	require.Equal(t, llmtest.PNGFor("a cat"), pic)
	img, err := png.Decode(bytes.NewReader(pic))
	require.NoError(t, err)
	require.Equal(t, 16, img.Bounds().Dx())

	dog, err := draw(context.Background(), b.client, "gpt-image-1", "a dog", "")
	require.NoError(t, err, "GPT Image models answer b64_json without being asked")
	require.NotEqual(t, cat.Data[0].B64JSON, dog.Data[0].B64JSON, "two prompts, two pictures")

	url, err := draw(context.Background(), b.client, "dall-e-2", "a cow", openai.CreateImageResponseFormatURL)
	require.NoError(t, err)
	require.Empty(t, url.Data[0].B64JSON)
	require.Contains(t, url.Data[0].URL, "https://llmtest.invalid/images/")

	require.Equal(t, []llmtest.ImageRequest{
		{Model: "dall-e-3", Prompt: "a cat", N: 1, Size: "1024x1024", ResponseFormat: "b64_json", Authorization: "Bearer sk-test"},
		{Model: "gpt-image-1", Prompt: "a dog", N: 1, Size: "1024x1024", Authorization: "Bearer sk-test"},
		{Model: "dall-e-2", Prompt: "a cow", N: 1, Size: "1024x1024", ResponseFormat: "url", Authorization: "Bearer sk-test"},
	}, b.srv.Images.Requests())
}

func TestImagesRefuseWhatOpenAIRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Images.Respond(llmtest.Generates)
	for _, tc := range []struct{ model, prompt, format, want string }{
		{"dall-e-3", "", "b64_json", "Missing required parameter: 'prompt'."},
		{"gpt-image-1", "a cat", "b64_json", "Unknown parameter: 'response_format'."},
		{"dall-e-2", "a cat", "png", "Invalid value: 'png'"},
	} {
		_, err := draw(context.Background(), b.client, tc.model, tc.prompt, tc.format)
		var apiErr *openai.APIError
		require.ErrorAs(t, err, &apiErr, tc.want)
		require.Equal(t, http.StatusBadRequest, apiErr.HTTPStatusCode)
		require.Equal(t, tc.want, apiErr.Message[:min(len(tc.want), len(apiErr.Message))])
	}
}

func TestImagesFaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Images.Enqueue(
		llmtest.MediaStatus(http.StatusInternalServerError),
		llmtest.ImageBytes([]byte("garbage")),
		llmtest.ImageMalformed(),
		llmtest.Generated().WithDelay(time.Minute),
	)
	_, err := draw(context.Background(), b.client, "dall-e-3", "one", "b64_json")
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusInternalServerError, apiErr.HTTPStatusCode)
	require.Equal(t, "llmtest: scripted status 500", apiErr.Message)

	resp, err := draw(context.Background(), b.client, "dall-e-3", "two", "b64_json")
	require.NoError(t, err)
	require.Equal(t, base64.StdEncoding.EncodeToString([]byte("garbage")), resp.Data[0].B64JSON)

	_, err = draw(context.Background(), b.client, "dall-e-3", "three", "b64_json")
	require.Error(t, err, "JSON cut short")

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = draw(ctx, b.client, "dall-e-3", "four", "b64_json")
	require.ErrorIs(t, err, context.DeadlineExceeded)

	_, err = draw(context.Background(), b.client, "dall-e-3", "five", "b64_json")
	require.ErrorContains(t, err, "llmtest: no scripted image")
	require.Len(t, b.srv.Images.Requests(), 5)
}
