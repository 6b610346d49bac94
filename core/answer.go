package core

import (
	"context"
	"strings"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
)

// WithoutReasoning wraps c so that what it returns has the model's
// reasoning taken out of Content (moved to Result.Reasoning): background
// work on a reasoning model (summaries, facts) must not keep its thinking
// as the result. The host gives plugins Env.LLM wrapped so.
func WithoutReasoning(c Completer) Completer { return reasoningFree{c} }

type reasoningFree struct{ c Completer }

func (r reasoningFree) Complete(ctx context.Context, req llm.Request) (llm.Result, error) {
	res, err := r.c.Complete(ctx, req)
	text, thought := modeltext.StripReasoning(res.Content)
	if thought != "" {
		res.Reasoning = strings.TrimSpace(strings.TrimSpace(res.Reasoning) + "\n\n" + thought)
	}
	res.Content = text
	return res, err
}
