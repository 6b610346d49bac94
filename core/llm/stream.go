package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/parleybot/parley/core/llm/internal/chunkjson"
)

// A streamed completion is read chunk by chunk and accumulated into the
// response the non-streamed request would have returned, so that the
// rest of a Run (tools, usage, health, limits) has one code path. Only
// reading differs: the text is shown as it grows, and a stream that
// breaks mid-answer is asked again, whole, under the same retry budget as
// a request that failed before its answer began.

// partials is a streamed Run's OnPartial, and whether a completion has
// begun yet: every later one begins with an empty text.
type partials struct {
	on      func(string)
	started bool
}

// newPartials returns nil, a Run that does not stream, for a nil on.
func newPartials(on func(string)) *partials {
	if on == nil {
		return nil
	}
	return &partials{on: on}
}

// begin marks the start of a completion's text.
func (p *partials) begin() {
	if p.started {
		p.on("")
	}
	p.started = true
}

// streamed asks for req as a stream and reads it whole, asking again while
// it breaks mid-answer and attempts (shared with the transport's retries)
// allow. An error before the stream began is go-openai's, for send to
// convert as it converts the non-streamed one's.
func (c *Client) streamed(ctx context.Context, req openai.ChatCompletionRequest, attempts *atomic.Int32, p *partials) (openai.ChatCompletionResponse, error) {
	for {
		resp, err := c.streamOnce(ctx, req, p)
		var broken *brokenStream
		if err == nil || !errors.As(err, &broken) || ctx.Err() != nil {
			return resp, err
		}
		n := int(attempts.Load())
		if n > c.cfg.MaxRetries {
			return resp, c.brokenError(broken, n)
		}
		delay := retryBackoff(c.cfg.RetryBase, c.cfg.MaxRetryDelay, n-1)
		c.log.WarnContext(ctx, "llm: the answer's stream broke; asking again",
			"attempt", n, "delay", delay, "error", c.redact.clean(broken.Error()))
		if err := c.cfg.Sleep(ctx, delay); err != nil {
			return resp, err
		}
	}
}

// streamOnce reads one streamed answer to its end.
func (c *Client) streamOnce(ctx context.Context, req openai.ChatCompletionRequest, p *partials) (openai.ChatCompletionResponse, error) {
	end := new(streamEnd)
	stream, err := c.api.CreateChatCompletionStream(context.WithValue(ctx, streamEndKey{}, end), req)
	if err != nil {
		return openai.ChatCompletionResponse{}, err
	}
	// Closing the body frees the request's slot (limit.go): it is held
	// for the whole stream.
	defer func() { _ = stream.Close() }()
	p.begin()
	var acc accumulator
	for {
		chunk, err := recv(stream)
		switch {
		case errors.Is(err, io.EOF):
			if acc.finish == "" && !end.done.Load() {
				return openai.ChatCompletionResponse{}, &brokenStream{cause: errEndedEarly}
			}
			return acc.response(), nil
		case err != nil:
			if _, ok := asError(err); ok || ctx.Err() != nil {
				return openai.ChatCompletionResponse{}, err // a timeout, not retried; or cancelled
			}
			return openai.ChatCompletionResponse{}, &brokenStream{cause: err}
		}
		acc.add(chunk, p.on)
	}
}

// recv reads the next chunk as stream.Recv does, most of them without
// reflection (see chunkjson).
func recv(stream *openai.ChatCompletionStream) (openai.ChatCompletionStreamResponse, error) {
	raw, err := stream.RecvRaw()
	if err != nil {
		return openai.ChatCompletionStreamResponse{}, err
	}
	if chunk, ok := chunkjson.Decode(raw); ok {
		return chunk, nil
	}
	var chunk openai.ChatCompletionStreamResponse
	err = json.Unmarshal(raw, &chunk)
	return chunk, err
}

// errEndedEarly is a stream that ended with neither a finish reason nor
// [DONE]: the server or a proxy closed it mid-answer.
var errEndedEarly = errors.New("the stream ended before the answer did")

// brokenStream is a stream that broke after it began.
type brokenStream struct{ cause error }

func (e *brokenStream) Error() string { return e.cause.Error() }
func (e *brokenStream) Unwrap() error { return e.cause }

// brokenError is what Run returns when the stream broke on its last
// attempt (n attempts in all).
func (c *Client) brokenError(b *brokenStream, n int) error {
	health := HealthServerError
	if otherHealth(b.cause) == HealthUnreachable || errors.Is(b.cause, io.ErrUnexpectedEOF) {
		health = HealthUnreachable
	}
	return &Error{
		StatusCode: http.StatusOK,
		Message:    "llm: the answer's stream broke" + attemptsText(n) + ": " + c.redact.clean(b.cause.Error()),
		Retryable:  true,
		Err:        c.redact.wrap(b.cause),
		health:     health,
	}
}

// accumulator builds the response a stream's chunks add up to.
type accumulator struct {
	id, model, fingerprint      string
	created                     int64
	chose                       bool // a chunk carried choice 0
	role                        string
	content, refusal, reasoning strings.Builder
	calls                       []openai.ToolCall
	finish                      openai.FinishReason
	usage                       openai.Usage
}

// add takes one chunk; on hears the content each time it grows.
func (a *accumulator) add(chunk openai.ChatCompletionStreamResponse, on func(string)) {
	if a.id == "" {
		a.id, a.created = chunk.ID, chunk.Created
	}
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if chunk.SystemFingerprint != "" {
		a.fingerprint = chunk.SystemFingerprint
	}
	if chunk.Usage != nil {
		a.usage = *chunk.Usage // the last chunk's, or cumulative ones: the last is the whole
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue // one choice is asked for
		}
		a.chose = true
		d := choice.Delta
		if d.Role != "" {
			a.role = d.Role
		}
		a.reasoning.WriteString(d.ReasoningContent)
		a.refusal.WriteString(d.Refusal)
		for _, tc := range d.ToolCalls {
			a.addCall(tc)
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
		if d.Content != "" {
			a.content.WriteString(d.Content)
			on(a.content.String()) // a view of the builder, not a copy
		}
	}
}

// addCall adds a tool call delta: the first of a call carries its id and
// name, the rest pieces of its arguments, all with the call's index. A
// server that sends no index, or a new id at a used index, starts a new
// call with each id.
func (a *accumulator) addCall(d openai.ToolCall) {
	i := len(a.calls) - 1
	switch {
	case d.Index != nil:
		i = *d.Index
	case d.ID != "" || i < 0:
		i = len(a.calls)
	}
	if i >= 0 && i < len(a.calls) && d.ID != "" && a.calls[i].ID != "" && d.ID != a.calls[i].ID {
		i = len(a.calls)
	}
	for i >= len(a.calls) {
		a.calls = append(a.calls, openai.ToolCall{Type: openai.ToolTypeFunction})
	}
	call := &a.calls[i]
	if call.ID == "" {
		call.ID = d.ID
	}
	if call.Function.Name == "" {
		call.Function.Name = d.Function.Name
	}
	if d.Type != "" {
		call.Type = d.Type
	}
	call.Function.Arguments += d.Function.Arguments
}

// response is the accumulated answer, as CreateChatCompletion returns it;
// without choices when no chunk carried one.
func (a *accumulator) response() openai.ChatCompletionResponse {
	resp := openai.ChatCompletionResponse{
		ID: a.id, Object: "chat.completion", Created: a.created, Model: a.model,
		SystemFingerprint: a.fingerprint, Usage: a.usage,
	}
	if !a.chose {
		return resp
	}
	role := a.role
	if role == "" {
		role = openai.ChatMessageRoleAssistant
	}
	resp.Choices = []openai.ChatCompletionChoice{{
		Message: openai.ChatCompletionMessage{
			Role: role, Content: a.content.String(), Refusal: a.refusal.String(),
			ReasoningContent: a.reasoning.String(), ToolCalls: a.calls,
		},
		FinishReason: a.finish,
	}}
	return resp
}

// streamEnd tells whether a stream's body ended with "data: [DONE]",
// which go-openai reads as the end without saying so.
type streamEnd struct {
	done atomic.Bool
}

// streamReadGap is the least time between two reads of a streamed
// answer's body once its text has begun. A model sends a chunk a token,
// 50 to 100 a second, and reading each as it comes costs a wake-up and a
// system call apiece: a third of what streaming cost (BENCHMARKS.md,
// issue 32). The partial text is shown at most every
// bot.streaming.interval (400 ms by default), so reading every 100 ms
// takes the chunks that came meanwhile in one read. Until the first
// text the body is read as it comes, so the first words show as soon as
// they can; the end of an answer comes at most streamReadGap later.
const streamReadGap = 100 * time.Millisecond

// textBegun is how a chunk with text starts its content: a delta whose
// "content" (or "reasoning_content") is not empty.
var textBegun = []byte(`content":"`)

type streamEndKey struct{}

// doneMark is the last event of a whole stream.
var doneMark = []byte("data: [DONE]")

// hasText reports whether b, a stretch of a stream's body, holds a delta
// with text (its string's first character; an escape counts).
func hasText(b []byte) bool {
	for {
		i := bytes.Index(b, textBegun)
		if i < 0 {
			return false
		}
		b = b[i+len(textBegun):]
		if len(b) > 0 && b[0] != '"' {
			return true
		}
	}
}

// streamDoer hands the body of a request carrying a *streamEnd to a
// doneWatcher.
type streamDoer struct{ next openai.HTTPDoer }

func (d streamDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.next.Do(req)
	if end, ok := req.Context().Value(streamEndKey{}).(*streamEnd); ok && err == nil {
		resp.Body = &doneWatcher{ReadCloser: resp.Body, end: end, ctx: req.Context()}
	}
	return resp, err
}

// doneWatcher keeps the last bytes read, enough to see "data: [DONE]"
// with the blank line after it, however the reads cut it.
// Its reads are spaced streamReadGap apart.
type doneWatcher struct {
	io.ReadCloser
	end *streamEnd
	ctx context.Context
	// begun is set once a read brought text; last is when the last read
	// returned; live when it had to wait for the server, or came after a
	// pause (the answer is being written now, not waiting in a buffer).
	begun, live bool
	last        time.Time
	tail        [24]byte
	n           int
}

func (w *doneWatcher) Read(p []byte) (int, error) {
	paused := false
	if wait := streamReadGap - time.Since(w.last); w.begun && w.live && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
		}
		paused = true
	}
	start := time.Now()
	n, err := w.ReadCloser.Read(p)
	w.last = time.Now()
	// A read answered at once, with no pause before it, found the answer
	// waiting (a fast server, a backlog): the rest is read at once too.
	w.live = paused || w.last.Sub(start) > time.Millisecond
	if !w.begun {
		w.begun = hasText(p[:n])
	}
	if n > 0 {
		if n >= len(w.tail) {
			w.n = copy(w.tail[:], p[n-len(w.tail):n])
		} else {
			keep := min(w.n, len(w.tail)-n)
			copy(w.tail[:], w.tail[w.n-keep:w.n])
			w.n = keep + copy(w.tail[keep:], p[:n])
		}
		w.end.done.Store(bytes.HasSuffix(bytes.TrimRight(w.tail[:w.n], " \r\n"), doneMark))
	}
	return n, err
}
