package markup

import (
	"strings"
	"testing"
)

// FuzzSplitProgress checks that the splitter always makes its way through
// a text without its emergency exit, whatever the text and the limit. Run
// it with go test -run '^$' -fuzz '^FuzzSplitProgress$' ./adapters/markup.
func FuzzSplitProgress(f *testing.F) {
	for _, s := range []string{
		"<div>\n" + strings.Repeat(" ", 300) + "x y z\n</div>",
		"**" + strings.Repeat("bold ", 100) + "**",
		strings.Repeat("x", 1000),
		"> " + strings.Repeat("`a` ", 100),
		"- ```go\n  " + strings.Repeat("y", 300) + "\n  ```",
		strings.Repeat("1. > - ", 20) + "```" + strings.Repeat("c", 40) + "\nx\n```",
		strings.Repeat("[a](https://e.com/"+strings.Repeat("b", 100)+") ", 5),
	} {
		f.Add(s, uint16(64))
		f.Add(s, uint16(200))
	}
	f.Fuzz(func(t *testing.T, md string, limit uint16) {
		if len(md) > 32<<10 {
			return
		}
		// Short texts are made long enough to need several parts.
		if n := int(limit); len(md) < n && len(md) > 0 {
			md = strings.Repeat(md+"\n", n/len(md)+1)
		}
		for _, fl := range []flavor{telegram, discord, slack, plain} {
			if _, stuck := splitParts(md, fl, int(limit)); stuck {
				t.Fatalf("flavor %d, limit %d: stuck on %q", fl, limit, md)
			}
		}
	})
}
