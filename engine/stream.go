package engine

import (
	"github.com/parleybot/parley/core"
)

// streamVisible is what of a model's raw text so far a user may see while
// it grows: its reasoning, its control tokens and any beginning of one
// held back (core/modeltext), and in rich text no half-written Markdown
// marker (adapters/markup).
func streamVisible(raw string, format core.TextFormat) string {
	// Placeholder until the streaming filter lands: show nothing.
	_ = raw
	_ = format
	return ""
}
