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

// filesKey is the idempotency key of the files a streamed reply sends
// after its text: a key of their own, for under the text's a platform
// that drops repeated keys (Discord's nonce) would take them for the
// text.
func filesKey(key string) string {
	if key == "" {
		return ""
	}
	return key + ".files"
}

// filesNotShown is text with a line per file of files saying it could
// not be shown here: what a platform without FileSender gets.
func filesNotShown(text string, files []core.OutboundFile) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(text, "\n"))
	for _, f := range files {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s %q (%s) cannot be shown here]", f.Kind, f.Name, core.ByteSize(int64(len(f.Data))))
	}
	return b.String()
}
