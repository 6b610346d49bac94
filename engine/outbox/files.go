package outbox

import (
	"fmt"
	"strings"

	"github.com/parleybot/parley/core"
)

// filesNotSentAgain is text with a line per file that was not kept and
// so could not be sent again.
func filesNotSentAgain(text string, files []core.Attachment) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(text, "\n"))
	for _, f := range files {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s %q (%s) could not be sent again after a restart]", f.Kind, f.Name, core.ByteSize(f.Size))
	}
	return b.String()
}
