package terminal_test

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/adaptertest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine/outbox"
)

// TestStreamedReplyThroughTheCorePrintsOnce runs real turns with
// streaming on: the model's answer streams, the core updates the
// terminal as it grows (as often as it likes) and finishes it, and the
// terminal shows each reply once, whole. Not parallel: see
// TestMarkdownReplyPrintsPlain.
func TestStreamedReplyThroughTheCorePrintsOnce(t *testing.T) {
	model := llmtest.NewServer(t)
	const answer = "Good morning! The tests ran green overnight, and the build is ready for you to look at."
	model.Enqueue(llmtest.Text(answer))
	model.Enqueue(llmtest.Text("Second answer, also whole."))
	a, term, thread := newTerminal(t)
	out := &writes{w: term.outW}
	a.Out = out
	client := modelClient(t, model)

	// A slow model: each time its text grows, it writes on only once the
	// terminal shows the text so far.
	slow := adaptertest.PacedModel{LLM: client, Shown: func(text string) bool {
		return strings.HasSuffix(strings.Join(out.all(), ""), strings.TrimSpace(text))
	}, T: t}
	// The visible text is the raw text here: plain answers, no reasoning.
	startCore(t, a, term, slow, outbox.Streaming{Enabled: true, Interval: time.Millisecond,
		Visible: func(raw string, _ core.TextFormat) string { return raw }})

	term.typeLine(t, "morning?")
	var got []adaptertest.Sent
	require.Eventually(t, func() bool {
		got = term.sent(thread)
		return len(got) > 0
	}, 10*time.Second, 5*time.Millisecond, "no reply was printed")
	term.typeLine(t, "and then?")
	require.Eventually(t, func() bool {
		got = term.sent(thread)
		return len(got) > 1
	}, 10*time.Second, 5*time.Millisecond, "no second reply was printed")
	require.Equal(t, []string{answer, "Second answer, also whole."}, texts(got), "each reply once, whole")
	// Printed as they grew, each reply's words once: the last step shows
	// the whole reply, so Finish adds only the prompt.
	want := []string{"> "}
	for _, reply := range []string{answer, "Second answer, also whole."} {
		n := len(reply)
		want = append(want, "Subaru: "+reply[:n/3], reply[n/3:2*n/3], reply[2*n/3:], "\n> ")
	}
	require.Equal(t, want, out.all())
}

func texts(sent []adaptertest.Sent) []string {
	out := make([]string, len(sent))
	for i, s := range sent {
		out[i] = s.Text
	}
	return out
}

// writes is an Out that keeps each write, to show how a reply printed.
type writes struct {
	w  io.Writer
	mu sync.Mutex
	ws []string
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.ws = append(w.ws, string(p))
	w.mu.Unlock()
	return w.w.Write(p)
}

func (w *writes) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ws...)
}
