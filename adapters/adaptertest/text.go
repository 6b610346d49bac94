package adaptertest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// words fill test paragraphs: mostly multi-byte, so a splitter counting
// bytes instead of runes (or cutting inside a character) shows.
var words = []string{"Grüße", "schön", "日本語", "naïve", "café", "Ærø", "smörgåsbord", "🙂", "plain", "words"}

// paragraph returns a paragraph of about n runes (at least one word),
// starting with a marker that names it.
func paragraph(label string, n int) string {
	var b strings.Builder
	b.WriteString("¶" + label)
	for i := 0; utf8.RuneCountInString(b.String()) < n; i++ {
		b.WriteString(" " + words[i%len(words)])
	}
	return b.String()
}

// longText returns a text of several times limit runes: paragraphs, each
// well under the limit so a splitter need not cut one, with one small
// fenced code block in the middle. It also returns the code block.
func longText(limit int) (text, code string) {
	paraLen := min(max(limit/3, 8), 1500)
	n := (5*limit/2)/paraLen + 1
	var cb strings.Builder
	cb.WriteString("```go\n")
	for i := 1; i <= 8; i++ {
		line := fmt.Sprintf("fmt.Println(\"héllo 世界 %d\")\n", i)
		if utf8.RuneCountInString(cb.String()+line+"```") > max(limit/3, 40) {
			break
		}
		cb.WriteString(line)
	}
	cb.WriteString("```")
	code = cb.String()

	blocks := make([]string, 0, n+1)
	for i := range n {
		if i == n/2 {
			blocks = append(blocks, code)
		}
		blocks = append(blocks, paragraph(fmt.Sprint(i+1), paraLen))
	}
	return strings.Join(blocks, "\n\n"), code
}

// requireReassembles checks that parts, in order, are text cut into
// pieces: each part's content is the next stretch of text, and only the
// whitespace where text was cut may be lost (platforms trim it).
func requireReassembles(t *testing.T, text string, parts []Sent) {
	t.Helper()
	rest := text
	for i, p := range parts {
		piece := strings.TrimSpace(p.Text)
		rest = strings.TrimLeft(rest, " \t\r\n")
		if !strings.HasPrefix(rest, piece) {
			t.Fatalf("adaptertest: part %d of %d is not the next stretch of the text\npart starts: %q\ntext continues: %q",
				i+1, len(parts), head(piece), head(rest))
		}
		rest = rest[len(piece):]
	}
	require.Empty(t, strings.TrimSpace(rest), "adaptertest: the parts end before the text does")
}

// head is the start of s, for failure messages.
func head(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}
