//go:build unix

package llm_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// benchAnswer is issue 32's measured answer: 480 characters, about 80
// words, streamed a word per delta.
var benchAnswer = strings.TrimSpace(strings.Repeat("The quick brown fox jumps over the lazy dog again. ", 10))[:480]

// BenchmarkRunStreamed compares a Run that streams the answer a word per
// delta with one that reads it whole, against the fake model in the same
// process. cpu-ns/op is the process's CPU time per run (client and fake
// server both); the prerendered pair answers with a body written in one
// go, so it measures the client's reading alone.
func BenchmarkRunStreamed(b *testing.B) {
	whole := llmtest.Text(benchAnswer).WithUsage(200, 80)
	cases := []struct {
		name   string
		answer llmtest.Response
		stream bool
	}{
		{"whole", whole, false},
		{"streamed", whole.WithWordDeltas(), true},
		{"whole-prerendered", llmtest.Raw(http.StatusOK, wholeBody()), false},
		{"streamed-prerendered", llmtest.Raw(http.StatusOK, streamBody()), true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			srv := llmtest.NewServer(b)
			srv.Respond(func(llmtest.Request) llmtest.Response { return c.answer })
			client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey, Model: "m",
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			req := userSays("tell me about the fox")
			var partials int
			if c.stream {
				req.OnPartial = func(string) { partials++ }
			}
			b.ReportAllocs()
			cpu := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				res, err := client.Run(context.Background(), req)
				if err != nil || res.Content != benchAnswer {
					b.Fatalf("run: %v, %d characters", err, len(res.Content))
				}
			}
			b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
			if c.stream && partials < b.N*len(strings.Fields(benchAnswer)) {
				b.Fatalf("%d partials for %d runs", partials, b.N)
			}
		})
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// wholeBody is benchAnswer as a chat completion.
func wholeBody() string {
	out, _ := json.Marshal(map[string]any{
		"id": "x", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": benchAnswer}}},
		"usage": map[string]int{"prompt_tokens": 200, "completion_tokens": 80, "total_tokens": 280},
	})
	return string(out)
}

// streamBody is benchAnswer streamed a word per delta, as OpenAI streams.
func streamBody() string {
	var sb strings.Builder
	event := func(v any) {
		out, _ := json.Marshal(v)
		sb.WriteString("data: " + string(out) + "\n\n")
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "x", "object": "chat.completion.chunk", "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	event(chunk(map[string]any{"role": "assistant"}, nil))
	for _, w := range strings.SplitAfter(benchAnswer, " ") {
		event(chunk(map[string]any{"content": w}, nil))
	}
	event(chunk(map[string]any{}, "stop"))
	event(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": "m", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": 200, "completion_tokens": 80, "total_tokens": 280}})
	sb.WriteString("data: [DONE]\n\n")
	return sb.String()
}
