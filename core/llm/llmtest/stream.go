package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// defaultDeltas is how many pieces a streamed text arrives in unless the
// response or the server says otherwise.
const defaultDeltas = 3

// streamScript is how a streamed answer's content arrives: in how many
// pieces, at what pace, and whether the stream breaks.
type streamScript struct {
	deltas int           // pieces; 0: the server's default
	words  bool          // a piece per word
	spread time.Duration // the first to the last content delta
	gate   <-chan struct{}
	breaks streamBreak
	after  int // content deltas sent before the break
	errMsg string
}

// streamBreak is how a stream stops mid-answer.
type streamBreak int

const (
	breakNone  streamBreak = iota
	breakCut               // the connection is cut: the body is left unterminated
	breakEarly             // the body ends cleanly, without finish_reason or [DONE]
	breakError             // a "data: {"error": ...}" event, then the end
)

// WithDeltas makes a streamed answer's text arrive in n deltas (fewer when
// it has fewer characters; n <= 0: the default, 3).
func (r Response) WithDeltas(n int) Response {
	r.stream.deltas, r.stream.words = n, false
	return r
}

// WithWordDeltas makes a streamed answer's text arrive a word per delta,
// each word with the whitespace after it, as models stream tokens.
func (r Response) WithWordDeltas() Response {
	r.stream.words = true
	return r
}

// WithStreamDelay spreads a streamed answer's text deltas evenly over d:
// the first goes at once, the last d later (a model that writes for d).
// The wait ends early when the client gives up.
func (r Response) WithStreamDelay(d time.Duration) Response {
	r.stream.spread = d
	return r
}

// WithDeltaGate makes each text delta of a streamed answer wait for a
// receive from gate, so a test releases the answer delta by delta with
// gate <- struct{}{} (which returns once the server has taken it);
// closing gate releases the rest.
func (r Response) WithDeltaGate(gate <-chan struct{}) Response {
	r.stream.gate = gate
	return r
}

// WithStreamCut cuts the connection after k text deltas of a streamed
// answer (all of them when it has fewer; before any tool call): no
// finish_reason, no [DONE], the chunked body unterminated, as when a
// server or a proxy dies mid-answer.
func (r Response) WithStreamCut(k int) Response {
	r.stream.breaks, r.stream.after = breakCut, k
	return r
}

// WithStreamEndEarly ends a streamed answer's body cleanly after k text
// deltas, without finish_reason or [DONE], as a proxy that closes a
// stream it timed out.
func (r Response) WithStreamEndEarly(k int) Response {
	r.stream.breaks, r.stream.after = breakEarly, k
	return r
}

// WithStreamError sends, after k text deltas of a streamed answer, the
// error event OpenAI-compatible servers send when generation fails
// mid-stream (data: {"error": {"message": msg, "type": "server_error"}})
// and ends the body.
func (r Response) WithStreamError(k int, msg string) Response {
	r.stream.breaks, r.stream.after, r.stream.errMsg = breakError, k, msg
	return r
}

// WithStreamDelay makes every streamed answer spread its text deltas over
// d unless the response sets its own (see Response.WithStreamDelay): a
// model that writes slowly, for benchmarks and responders.
func WithStreamDelay(d time.Duration) Option {
	return func(s *Server) { s.stream.spread = d }
}

// WithWordDeltas makes every streamed answer arrive a word per delta
// unless the response sets its own number of deltas.
func WithWordDeltas() Option {
	return func(s *Server) { s.stream.words = true }
}

// streamWriter writes one streamed answer as server-sent events.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	r       *http.Request
	done    <-chan struct{}
	id      string
	model   string
	created int64
}

// wireChunk is a chunk as OpenAI writes it: go-openai's own type would
// add Azure's content filter results to every choice.
type wireChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []wireChoice  `json:"choices"`
	Usage   *openai.Usage `json:"usage,omitempty"`
}

type wireChoice struct {
	Index        int                                    `json:"index"`
	Delta        openai.ChatCompletionStreamChoiceDelta `json:"delta"`
	Logprobs     *struct{}                              `json:"logprobs"`
	FinishReason *openai.FinishReason                   `json:"finish_reason"` // null until the last
}

func (sw *streamWriter) send(choices []wireChoice, usage *openai.Usage) {
	b, _ := json.Marshal(wireChunk{ID: sw.id, Object: "chat.completion.chunk", Created: sw.created, Model: sw.model,
		Choices: choices, Usage: usage})
	sw.raw("data: " + string(b) + "\n\n")
}

func (sw *streamWriter) raw(event string) {
	_, _ = io.WriteString(sw.w, event)
	_ = sw.rc.Flush()
}

func (sw *streamWriter) delta(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) {
	c := wireChoice{Delta: d}
	if finish != "" {
		c.FinishReason = &finish
	}
	sw.send([]wireChoice{c}, nil)
}

// pace waits before text delta i of n as script says, and reports false
// when the client or the server gave up first.
func (sw *streamWriter) pace(script streamScript, i, n int) bool {
	if script.spread > 0 && i > 0 {
		t := time.NewTimer(script.spread / time.Duration(n-1))
		defer t.Stop()
		select {
		case <-t.C:
		case <-sw.r.Context().Done():
			return false
		case <-sw.done:
			return false
		}
	}
	if script.gate != nil {
		select {
		case <-script.gate:
		case <-sw.r.Context().Done():
			return false
		case <-sw.done:
			return false
		}
	}
	return true
}

// writeStream sends resp as server-sent events the way OpenAI streams: any
// reasoning_content and refusal deltas, the text in deltas (paced, and
// broken, as the response's stream script says), tool calls as indexed
// deltas whose arguments arrive in pieces, a final chunk with the finish
// reason, a usage chunk when stream_options.include_usage asks for it, and
// "data: [DONE]".
func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, chat openai.ChatCompletionRequest, resp Response, id string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &streamWriter{w: w, rc: http.NewResponseController(w), r: r, done: s.done, id: id,
		model: s.models.answering(chat.Model, s.model), created: time.Now().Unix()}

	if resp.malformed {
		sw.raw("data: {\"id\":\"broken\n\n")
		return
	}
	script := resp.stream.or(s.stream)
	sw.delta(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, "")
	// Reasoning servers stream what the model thinks before its answer.
	for _, part := range split(resp.reasoning, 2) {
		sw.delta(openai.ChatCompletionStreamChoiceDelta{ReasoningContent: part}, "")
	}
	for _, part := range split(resp.refusal, 2) {
		sw.delta(openai.ChatCompletionStreamChoiceDelta{Refusal: part}, "")
	}
	pieces := script.pieces(resp.content)
	for i, part := range pieces {
		if script.breaks != breakNone && i == script.after {
			break
		}
		if !sw.pace(script, i, len(pieces)) {
			return
		}
		sw.delta(openai.ChatCompletionStreamChoiceDelta{Content: part}, "")
	}
	if !sw.stop(script) {
		return
	}
	sw.toolCalls(resp.toolCalls)
	sw.delta(openai.ChatCompletionStreamChoiceDelta{}, resp.finish())
	if chat.StreamOptions != nil && chat.StreamOptions.IncludeUsage {
		usage := resp.usageOrDefault()
		sw.send([]wireChoice{}, &usage)
	}
	sw.raw("data: [DONE]\n\n")
}

// stop breaks the stream as script says, and reports whether it goes on.
func (sw *streamWriter) stop(script streamScript) bool {
	switch script.breaks {
	case breakCut:
		// net/http closes the connection without ending the chunked body.
		panic(http.ErrAbortHandler)
	case breakEarly:
		return false
	case breakError:
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": script.errMsg, "type": "server_error", "param": nil, "code": nil,
		}})
		sw.raw("data: " + string(b) + "\n\n")
		return false
	}
	return true
}

// toolCalls streams calls as OpenAI does: per call, a delta with its index,
// id, type and name, then its arguments in pieces.
func (sw *streamWriter) toolCalls(calls []ToolCall) {
	for i, c := range calls {
		index := i
		sw.delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
			Index:    &index,
			ID:       c.ID,
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name},
		}}}, "")
		for _, part := range split(c.Arguments, 2) {
			sw.delta(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{{
				Index:    &index,
				Function: openai.FunctionCall{Arguments: part},
			}}}, "")
		}
	}
}

// or is the script with the server's defaults (WithStreamDelay,
// WithWordDeltas) where it sets none.
func (sc streamScript) or(defaults streamScript) streamScript {
	if sc.spread == 0 {
		sc.spread = defaults.spread
	}
	if sc.deltas == 0 && !sc.words {
		sc.words = defaults.words
	}
	return sc
}

// pieces cuts a streamed text into its deltas.
func (sc streamScript) pieces(text string) []string {
	if sc.words {
		return splitWords(text)
	}
	n := sc.deltas
	if n <= 0 {
		n = defaultDeltas
	}
	return split(text, n)
}

// split cuts s into at most n non-empty pieces on rune boundaries.
func split(s string, n int) []string {
	runes := []rune(s)
	if len(runes) == 0 {
		return nil
	}
	size := (len(runes) + n - 1) / n
	var parts []string
	for start := 0; start < len(runes); start += size {
		end := min(start+size, len(runes))
		parts = append(parts, string(runes[start:end]))
	}
	return parts
}

// splitWords cuts s after the whitespace that follows each word; leading
// whitespace goes with the first word.
func splitWords(s string) []string {
	var parts []string
	start, inSpace := 0, false
	for i, c := range s {
		space := unicode.IsSpace(c)
		if !space && inSpace && strings.TrimSpace(s[start:i]) != "" {
			parts = append(parts, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	return parts
}
