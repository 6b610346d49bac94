package partial_test

import (
	"strings"
	"testing"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/partial"
	"github.com/parleybot/parley/core/modeltext"
)

// benchAnswer is a 2 KB answer as a model streams it: reasoning first,
// then Markdown with every construct partial.Markdown looks at, and a
// final control token.
var benchAnswer = func() string {
	var b strings.Builder
	b.WriteString("<think>The user asks how to read a file in Go; show os.ReadFile and bufio.</think>\n\n")
	for b.Len() < 2048 {
		b.WriteString("Here is **how** to do it, with *care* and `os.ReadFile` (see [the docs](https://pkg.go.dev/os#ReadFile)):\n\n")
		b.WriteString("```go\ndata, err := os.ReadFile(\"notes.txt\")\nif err != nil {\n\treturn err\n}\n```\n\n")
		b.WriteString("- first, check the error\n- then use ~~ioutil~~ `os`\n\n")
	}
	const last = "\n<WANT_MORE>"
	return b.String()[:2048-len(last)] + last
}()

// streamSteps runs what the engine does on every delta of a reply
// growing by step bytes: the filter and the Markdown partial; render adds
// a rendering (Telegram's) of each.
func streamSteps(answer string, step int, render bool) int {
	n := 0
	for k := step; ; k += step {
		k = min(k, len(answer))
		md := partial.Markdown(modeltext.Partial(answer[:k]))
		if render {
			md = markup.TelegramV2(md)
		}
		n += len(md)
		if k == len(answer) {
			return n
		}
	}
}

// BenchmarkStreamedReply is the CPU a streamed reply costs the core: one
// op is a whole 2 KB answer growing 20 bytes at a time (103 partials),
// each through modeltext.Partial ("filter") and partial.Markdown
// ("filter+partial"); "rendered" adds a
// TelegramV2 rendering of each partial (what an adapter does per update,
// though updates are coalesced to one per bot.streaming.interval).
// "whole" is the non-streamed reply: Clean and one rendering.
func BenchmarkStreamedReply(b *testing.B) {
	b.Run("filter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for k := 20; k < len(benchAnswer)+20; k += 20 {
				modeltext.Partial(benchAnswer[:min(k, len(benchAnswer))])
			}
		}
	})
	b.Run("filter+partial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			streamSteps(benchAnswer, 20, false)
		}
	})
	b.Run("rendered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			streamSteps(benchAnswer, 20, true)
		}
	})
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			markup.TelegramV2(modeltext.Clean(benchAnswer))
		}
	})
}
