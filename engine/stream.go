package engine

import (
	"github.com/parleybot/parley/adapters/markup/partial"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/modeltext"
)

// streamVisible is what of a model's raw text so far a user may see while
// it grows: its reasoning, its control tokens and any beginning of one
// held back (modeltext.Partial), and in rich text no half-written
// Markdown marker (partial.Markdown).
func streamVisible(raw string, format core.TextFormat) string {
	v := modeltext.Partial(raw)
	if format == core.FormatRichText {
		v = partial.Markdown(v)
	}
	return v
}
