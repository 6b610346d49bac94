package llmtest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// speak asks the server through go-openai, as a real client would, and
// returns the audio and its Content-Type.
func speak(ctx context.Context, client *openai.Client, input string, format openai.SpeechResponseFormat) ([]byte, string, error) {
	resp, err := client.CreateSpeech(ctx, openai.CreateSpeechRequest{
		Model: openai.TTSModelGPT4oMini, Input: input, Voice: openai.VoiceAlloy, ResponseFormat: format,
	})
	if err != nil {
		return nil, "", err
	}
	defer resp.Close()
	b, err := io.ReadAll(resp)
	return b, resp.Header().Get("Content-Type"), err
}

func TestSpeechMakesOggOpus(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Speech.Enqueue(llmtest.Generated())
	audio, ct, err := speak(context.Background(), b.client, "Hello, Ada", openai.SpeechResponseFormatOpus)
	require.NoError(t, err)
	require.Equal(t, "audio/opus", ct)
	require.Equal(t, llmtest.OggOpus("Hello, Ada"), audio)
	said, err := llmtest.SpokenInput(audio)
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada", said)

	require.Equal(t, []llmtest.SpeechRequest{{
		Model: "gpt-4o-mini-tts", Input: "Hello, Ada", Voice: "alloy", ResponseFormat: "opus", Authorization: "Bearer sk-test",
	}}, b.srv.Speech.Requests())
	require.Empty(t, b.srv.Requests(), "no chat request")
	require.Zero(t, b.srv.Speech.Pending())
}

// The stream is Ogg Opus as RFC 7845 lays it out, read here byte by byte
// rather than with the package that wrote it.
func TestOggOpusLayout(t *testing.T) {
	t.Parallel()
	stream := llmtest.OggOpus(strings.Repeat("a", 120)) // 120 frames: pages of 50, 50, 20
	type page struct {
		headerType byte
		granule    int64
		seq        uint32
		body       []byte
	}
	var pages []page
	for rest := stream; len(rest) > 0; {
		require.Equal(t, "OggS", string(rest[:4]))
		require.Zero(t, rest[4], "version")
		nseg := int(rest[26])
		size := 0
		for _, l := range rest[27 : 27+nseg] {
			size += int(l)
		}
		pages = append(pages, page{rest[5], int64(binary.LittleEndian.Uint64(rest[6:])), binary.LittleEndian.Uint32(rest[18:]), rest[27+nseg : 27+nseg+size]})
		require.Equal(t, uint32(0x11c0ffee), binary.LittleEndian.Uint32(rest[14:]), "one logical stream")
		rest = rest[27+nseg+size:]
	}
	require.Len(t, pages, 5)
	head := pages[0].body
	require.Equal(t, byte(0x02), pages[0].headerType, "beginning of stream")
	require.Equal(t, "OpusHead", string(head[:8]))
	require.Len(t, head, 19)
	require.Equal(t, byte(1), head[8], "version")
	require.Equal(t, byte(1), head[9], "mono")
	require.Equal(t, uint16(312), binary.LittleEndian.Uint16(head[10:]), "pre-skip")
	require.Equal(t, uint32(48000), binary.LittleEndian.Uint32(head[12:]))
	require.Equal(t, "OpusTags", string(pages[1].body[:8]))
	require.Zero(t, pages[1].granule)
	require.Equal(t, bytes.Repeat([]byte{0xf8, 0xff, 0xfe}, 50), pages[2].body)
	require.Equal(t, int64(50*960), pages[2].granule)
	require.Equal(t, int64(120*960), pages[4].granule)
	require.Equal(t, byte(0x04), pages[4].headerType, "end of stream")
	for i, p := range pages {
		require.Equal(t, uint32(i), p.seq)
	}
}

func TestSpeechRefusesWhatOpenAIRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Speech.Respond(llmtest.Generates)
	for name, tc := range map[string]struct {
		input  string
		format openai.SpeechResponseFormat
		want   string
	}{
		"no input":  {"", openai.SpeechResponseFormatOpus, "Missing required parameter: 'input'."},
		"too long":  {strings.Repeat("é", 4097), openai.SpeechResponseFormatOpus, "maximum length 4096, but got a string with length 4097"},
		"mp3":       {"hi", openai.SpeechResponseFormatMp3, `the fake speaks only opus, not response_format "mp3"`},
		"no format": {"hi", "", `not response_format ""`},
	} {
		_, _, err := speak(context.Background(), b.client, tc.input, tc.format)
		var apiErr *openai.APIError
		require.ErrorAs(t, err, &apiErr, name)
		require.Equal(t, http.StatusBadRequest, apiErr.HTTPStatusCode, name)
		require.Contains(t, apiErr.Message, tc.want, name)
	}
	require.Len(t, b.srv.Speech.Requests(), 4, "refused requests are recorded")
	audio, _, err := speak(context.Background(), b.client, strings.Repeat("é", 4096), openai.SpeechResponseFormatOpus)
	require.NoError(t, err, "4,096 characters is the most")
	said, err := llmtest.SpokenInput(audio)
	require.NoError(t, err)
	require.Equal(t, strings.Repeat("é", 4096), said)
}

func TestSpeechFaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Speech.Enqueue(
		llmtest.MediaStatus(http.StatusTooManyRequests).WithRetryAfter("3").WithErrorMessage("slow down"),
		llmtest.AudioBytes("audio/ogg", []byte("garbage")),
		llmtest.Generated().WithDelay(time.Minute),
	)
	_, _, err := speak(context.Background(), b.client, "one", openai.SpeechResponseFormatOpus)
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusTooManyRequests, apiErr.HTTPStatusCode)
	require.Equal(t, "slow down", apiErr.Message)

	audio, ct, err := speak(context.Background(), b.client, "two", openai.SpeechResponseFormatOpus)
	require.NoError(t, err)
	require.Equal(t, "audio/ogg", ct)
	require.Equal(t, "garbage", string(audio))
	_, err = llmtest.SpokenInput(audio)
	require.Error(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, _, err = speak(ctx, b.client, "three", openai.SpeechResponseFormatOpus)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)

	_, _, err = speak(context.Background(), b.client, "four", openai.SpeechResponseFormatOpus)
	require.ErrorContains(t, err, "llmtest: no scripted speech")
	require.Len(t, b.srv.Speech.WaitRequests(t, 4, time.Second), 4)
}

func TestSpeechStallsMidAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Speech.Enqueue(llmtest.Generated().WithStall(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := b.client.CreateSpeech(ctx, openai.CreateSpeechRequest{
		Model: openai.TTSModel1, Input: "hello", Voice: openai.VoiceAlloy, ResponseFormat: openai.SpeechResponseFormatOpus,
	})
	require.NoError(t, err, "the headers came")
	defer resp.Close()
	whole := llmtest.OggOpus("hello")
	half := make([]byte, len(whole)/2)
	_, err = io.ReadFull(resp, half)
	require.NoError(t, err)
	require.Equal(t, whole[:len(whole)/2], half, "the first half came")
	cancel() // the rest would take a minute
	_, err = io.ReadAll(resp)
	require.Error(t, err)
}

func TestSpeechNeedsTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithAPIKey("sk-other-key-9876"))
	b.srv.Speech.Enqueue(llmtest.Generated())
	_, _, err := speak(context.Background(), b.client, "hi", openai.SpeechResponseFormatOpus)
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusUnauthorized, apiErr.HTTPStatusCode)
	require.Equal(t, 1, b.srv.Speech.Pending(), "a refused request takes no scripted answer")
	require.Len(t, b.srv.Speech.Requests(), 1)
}
