package llmtest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

var voice = []byte("OggS fake voice note")

// transcribe asks the server through go-openai, as a real client would.
func transcribe(ctx context.Context, client *openai.Client, name string) (string, error) {
	resp, err := client.CreateTranscription(ctx, openai.AudioRequest{
		Model:    openai.Whisper1,
		FilePath: name,
		Reader:   bytes.NewReader(voice),
	})
	return resp.Text, err
}

// postForm sends a multipart transcription form with the given fields and,
// when name is set, a file part; it returns the status and body.
func postForm(t *testing.T, srv *llmtest.Server, fields map[string]string, name string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for k, v := range fields {
		require.NoError(t, w.WriteField(k, v))
	}
	if name != "" {
		fw, err := w.CreateFormFile("file", name)
		require.NoError(t, err)
		_, err = fw.Write(voice)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	resp, err := http.Post(srv.URL()+"/audio/transcriptions", w.FormDataContentType(), &body)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(out)
}

func TestTranscriptionQueueAndRecording(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("chat answer"))
	b.srv.EnqueueTranscription(
		llmtest.Transcript("hello there"),
		llmtest.TranscriptionStatus(http.StatusTooManyRequests).WithErrorMessage("slow down"),
	)
	require.Equal(t, 2, b.srv.PendingTranscriptions())

	text, err := transcribe(context.Background(), b.client, "voice.ogg")
	require.NoError(t, err)
	require.Equal(t, "hello there", text)

	_, err = transcribe(context.Background(), b.client, "audio.mp3")
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusTooManyRequests, apiErr.HTTPStatusCode)
	require.Equal(t, "slow down", apiErr.Message)

	_, err = transcribe(context.Background(), b.client, "clip.m4a")
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusInternalServerError, apiErr.HTTPStatusCode)
	require.Equal(t, "llmtest: no scripted transcription", apiErr.Message)

	require.Equal(t, 1, b.srv.Pending(), "transcriptions leave the chat queue alone")
	require.Empty(t, b.srv.Requests())
	reqs := b.srv.TranscriptionRequests()
	require.Len(t, reqs, 3)
	require.Equal(t, []string{"voice.ogg", "audio.mp3", "clip.m4a"}, []string{reqs[0].FileName, reqs[1].FileName, reqs[2].FileName})
	require.Equal(t, openai.Whisper1, reqs[0].Model)
	require.Equal(t, voice, reqs[0].File)
	require.Equal(t, "Bearer sk-test", reqs[0].Authorization)
}

func TestTranscriptionResponder(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithTranscriber(func(r llmtest.TranscriptionRequest) llmtest.TranscriptionResponse {
		return llmtest.Transcript("you sent " + r.FileName)
	}))
	b.srv.EnqueueTranscription(llmtest.Transcript("scripted first"))
	text, err := transcribe(context.Background(), b.client, "a.wav")
	require.NoError(t, err)
	require.Equal(t, "scripted first", text)
	text, err = transcribe(context.Background(), b.client, "b.webm")
	require.NoError(t, err)
	require.Equal(t, "you sent b.webm", text)

	b.srv.RespondTranscription(nil)
	_, err = transcribe(context.Background(), b.client, "c.wav")
	require.Error(t, err)
}

func TestTranscriptionTextFormatAndRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.EnqueueTranscription(llmtest.Transcript("plain words"), llmtest.TranscriptionStatus(503).WithRetryAfter("2"))
	status, body := postForm(t, b.srv, map[string]string{"model": "whisper-1", "response_format": "text"}, "v.ogg")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "plain words", body)
	require.Equal(t, "text", b.srv.TranscriptionRequests()[0].ResponseFormat)

	resp, err := http.Post(b.srv.URL()+"/audio/transcriptions", "multipart/form-data; boundary=x", bytes.NewReader([]byte("--x\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"v.ogg\"\r\n\r\nabc\r\n--x--\r\n")))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
}

func TestTranscriptionNeedsFileAndModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.EnqueueTranscription(llmtest.Transcript("unused"))
	status, body := postForm(t, b.srv, map[string]string{"model": "whisper-1"}, "")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "no file")
	status, body = postForm(t, b.srv, nil, "v.ogg")
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "no model")
	require.Equal(t, 1, b.srv.PendingTranscriptions())
	require.Empty(t, b.srv.TranscriptionRequests(), "malformed forms are not recorded")
}

func TestTranscriptionHonoursAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithAPIKey("sk-other-0123456789abcd"))
	b.srv.EnqueueTranscription(llmtest.Transcript("welcome"))
	_, err := transcribe(context.Background(), b.client, "v.ogg")
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.HTTPStatusCode)
	require.Equal(t, 1, b.srv.PendingTranscriptions())
	require.Len(t, b.srv.TranscriptionRequests(), 1, "refused requests are recorded")

	b.srv.SetAPIKey("sk-test")
	text, err := transcribe(context.Background(), b.client, "v.ogg")
	require.NoError(t, err)
	require.Equal(t, "welcome", text)
}

func TestTranscriptionHonoursLatency(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithLatency(time.Minute))
	b.srv.EnqueueTranscription(llmtest.Transcript("late"))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := transcribe(ctx, b.client, "v.ogg")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestImagePartHelpers(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithResponder(llmtest.Echo))
	img1 := "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString([]byte("jpeg one"))
	img2 := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("png two"))
	image := func(u string) openai.ChatMessagePart {
		return openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: u, Detail: openai.ImageURLDetailAuto}}
	}
	req := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{image(img1)}},
		{Role: openai.ChatMessageRoleAssistant, Content: "nice"},
		{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
			{Type: openai.ChatMessagePartTypeText, Text: "and"},
			image(img2),
			{Type: openai.ChatMessagePartTypeText, Text: "this?"},
		}},
	}}
	resp, err := b.client.CreateChatCompletion(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "and\nthis?", resp.Choices[0].Message.Content, "Echo repeats the text parts")

	got := b.srv.Requests()[0]
	require.Equal(t, []string{img1, img2}, got.ImageURLs())
	require.Len(t, got.LastUserParts(), 3)
	mediaType, data, err := llmtest.DecodeDataURL(got.LastUserParts()[1].ImageURL.URL)
	require.NoError(t, err)
	require.Equal(t, "image/png", mediaType)
	require.Equal(t, []byte("png two"), data)

	for _, bad := range []string{"https://example.com/a.png", "data:image/png;base64", "data:image/png,abc", "data:image/png;base64,!!"} {
		_, _, err := llmtest.DecodeDataURL(bad)
		require.Error(t, err, bad)
	}
}
