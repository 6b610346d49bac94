package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// PacedModel is a slow model for an adapter's streaming tests through the
// core: it asks LLM for the whole answer, then lets it grow in three
// steps through the request's OnPartial, each step waiting until Shown
// says the user sees the text so far, so that the test is paced by what
// the user sees rather than by a clock. What reaches OnPartial is the
// answer's raw text; the core filters it as it does a real stream.
type PacedModel struct {
	core.LLM
	// Shown reports whether the user sees text, the answer so far.
	Shown func(text string) bool
	// T fails the test when a step is not shown within 5 s.
	T testing.TB
}

// Run asks for the whole answer and replays it through req.OnPartial.
func (p PacedModel) Run(ctx context.Context, req llm.Request) (llm.Result, error) {
	onPartial := req.OnPartial
	req.OnPartial = nil
	res, err := p.LLM.Run(ctx, req)
	if err != nil || onPartial == nil {
		return res, err
	}
	onPartial("")
	n := len(res.Content)
	for _, end := range []int{n / 3, 2 * n / 3, n} {
		text := res.Content[:end]
		onPartial(text)
		deadline := time.Now().Add(5 * time.Second)
		for !p.Shown(text) {
			if time.Now().After(deadline) {
				p.T.Errorf("the user never saw %q", text)
				return res, err
			}
			time.Sleep(time.Millisecond)
		}
	}
	return res, err
}
