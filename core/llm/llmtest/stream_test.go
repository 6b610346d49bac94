package llmtest_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// deltaStream is what a client read from a stream: the text deltas, the
// finish reason, and the error it ended with (nil: [DONE]).
type deltaStream struct {
	deltas []string
	finish openai.FinishReason
	err    error
}

func (s deltaStream) text() string { return strings.Join(s.deltas, "") }

// readDeltas asks for a stream and reads it to its end; each text delta is
// also sent on seen when it is not nil.
func readDeltas(t *testing.T, b testBundle, seen chan<- string) deltaStream {
	t.Helper()
	req := chat("q")
	req.Stream = true
	stream, err := b.client.CreateChatCompletionStream(context.Background(), req)
	require.NoError(t, err)
	defer stream.Close()
	var out deltaStream
	for {
		chunk, err := stream.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				out.err = err
			}
			return out
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" {
				out.deltas = append(out.deltas, c.Delta.Content)
				if seen != nil {
					seen <- c.Delta.Content
				}
			}
			if c.FinishReason != "" {
				out.finish = c.FinishReason
			}
		}
	}
}

func TestStreamDeltas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(
		llmtest.Text(" Hello  there, world!\n").WithWordDeltas(),
		llmtest.Text("abcdefghij").WithDeltas(5),
		llmtest.Text("abc").WithDeltas(10),
	)
	require.Equal(t, []string{" Hello  ", "there, ", "world!\n"}, readDeltas(t, b, nil).deltas)
	require.Equal(t, []string{"ab", "cd", "ef", "gh", "ij"}, readDeltas(t, b, nil).deltas)
	require.Equal(t, []string{"a", "b", "c"}, readDeltas(t, b, nil).deltas)
}

func TestStreamServerDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.WithWordDeltas(), llmtest.WithStreamDelay(40*time.Millisecond))
	b.srv.Enqueue(llmtest.Text("one two three"), llmtest.Text("abcdef").WithDeltas(2).WithStreamDelay(time.Nanosecond))
	start := time.Now()
	got := readDeltas(t, b, nil)
	require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond, "the answer is spread over the delay")
	require.Equal(t, []string{"one ", "two ", "three"}, got.deltas)
	require.Equal(t, openai.FinishReasonStop, got.finish)
	require.Equal(t, []string{"abc", "def"}, readDeltas(t, b, nil).deltas, "a response's own deltas win")
}

func TestStreamDeltaGate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gate := make(chan struct{})
	b.srv.Enqueue(llmtest.Text("a b c d").WithWordDeltas().WithDeltaGate(gate))
	seen := make(chan string, 4)
	done := make(chan deltaStream, 1)
	go func() { done <- readDeltas(t, b, seen) }()
	for _, want := range []string{"a ", "b "} {
		gate <- struct{}{}
		select {
		case got := <-seen:
			require.Equal(t, want, got)
		case <-time.After(5 * time.Second):
			t.Fatal("the released delta did not arrive")
		}
	}
	select {
	case got := <-seen:
		t.Fatalf("a delta arrived before its release: %q", got)
	default:
	}
	close(gate)
	got := <-done
	require.NoError(t, got.err)
	require.Equal(t, "a b c d", got.text())
}

func TestStreamBreaks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(
		llmtest.Text("one two three").WithWordDeltas().WithStreamCut(2),
		llmtest.Text("one two three").WithWordDeltas().WithStreamEndEarly(1),
		llmtest.Text("one two three").WithWordDeltas().WithStreamError(1, "the GPU fell over"),
		llmtest.ToolCalls(llmtest.Call("c1", "f", "{}")).WithStreamCut(5),
	)
	cut := readDeltas(t, b, nil)
	require.Equal(t, []string{"one ", "two "}, cut.deltas)
	require.ErrorIs(t, cut.err, io.ErrUnexpectedEOF, "the chunked body is unterminated")
	require.Empty(t, cut.finish)

	early := readDeltas(t, b, nil)
	require.Equal(t, []string{"one "}, early.deltas)
	require.NoError(t, early.err, "a clean end, without [DONE]")
	require.Empty(t, early.finish)

	failed := readDeltas(t, b, nil)
	require.Equal(t, []string{"one "}, failed.deltas)
	var apiErr *openai.APIError
	require.ErrorAs(t, failed.err, &apiErr)
	require.Equal(t, "the GPU fell over", apiErr.Message)

	calls := readDeltas(t, b, nil)
	require.ErrorIs(t, calls.err, io.ErrUnexpectedEOF, "the break comes before the tool calls")
	require.Empty(t, calls.finish)
}
