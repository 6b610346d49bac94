// Package partial makes the beginning of a Markdown text still being
// written (a reply streamed as the model writes it) renderable by
// adapters/markup in every flavour without a raw marker showing that the
// finished text would not show. It reads Markdown as adapters/markup does
// (goldmark, CommonMark with GFM strikethrough) and imports nothing of
// Parley.
package partial

import (
	"strings"
	"unicode"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Markdown makes md, the beginning of a Markdown text still being written
// (a reply streamed as the model writes it), into Markdown that every
// renderer here shows without a raw marker the finished text would not
// show (adapters/markup TelegramV2, Discord, Slack, Plain and HTML). At
// its end:
//
//   - emphasis, bold and strikethrough still open are closed, and so is
//     inline code ("**bold te" shows as bold "bold te");
//   - an open code fence shows as a code block (CommonMark closes it at
//     the end of the text); its opening line, and a last line that may be
//     its closing fence, wait for their line end;
//   - a link or image not finished ("[tex", "[text](http://exa") is held
//     back from its "[" (a bracket that stays open over a line end, or
//     long, is taken as text);
//   - what may still grow into something else is held back: a trailing
//     run of markers, a backslash, an entity ("&am"), an autolink or tag
//     ("<https://exa"), a last line of block markers alone ("-", "1.",
//     "##", "> ", "---", the "===" under a heading), a table's first rows
//     before its delimiter row, and trailing white space.
//
// Emphasis and code are closed only on one line, outside a bare URL and
// a table (where a closer would show), and only where the closing marker really closes it, as
// the parser pairs markers; where it would not, the text is held back
// from the opening marker instead. Closing is a guess: a star that the
// rest of the text leaves unpaired ("2*3") shows as emphasis until then.
//
// A finished text whose spans are all closed and whose last line has
// words renders as it would without Markdown.
func Markdown(md string) string {
	md = strings.TrimRightFunc(normalize(md), unicode.IsSpace)
	lineStart := strings.LastIndexByte(md, '\n') + 1
	if markersOnly(md[lineStart:]) {
		return closeEnd(md[:max(lineStart-1, 0)], false, 0)
	}
	return closeEnd(md, true, 0)
}

// maxCuts bounds how many times the end is cut back to an earlier block
// (each cut parses the text again); a text that needs more shows nothing
// yet rather than cost more.
const maxCuts = 8

// closeEnd closes or cuts back what is open at the end of md: its last
// block's inline spans, and (when lastLineOpen, the last line not being
// known whole) a fence's opening or closing line.
func closeEnd(md string, lastLineOpen bool, cuts int) string {
	md = strings.TrimRightFunc(md, unicode.IsSpace)
	if md == "" || cuts > maxCuts {
		return ""
	}
	lineStart := strings.LastIndexByte(md, '\n') + 1
	switch n := lastLeaf(mdParser.Parse(text.NewReader([]byte(md)))).(type) {
	case *ast.FencedCodeBlock:
		if lastLineOpen && (n.Lines().Len() == 0 || fenceOnly(md[lineStart:])) {
			// The opening line may not be whole (or be inline code), and
			// a last line of backticks may be the closing fence.
			return closeEnd(md[:max(lineStart-1, 0)], false, cuts+1)
		}
	case *ast.Paragraph, *ast.Heading, *ast.TextBlock:
		if n.Lines().Len() == 0 {
			break
		}
		start := n.Lines().At(0).Start
		if _, ok := n.(*ast.Paragraph); ok && n.Lines().Len() < 3 && strings.HasPrefix(md[start:], "|") {
			// A table (in the web chat) before its delimiter row and
			// first row: its pipes would show.
			return closeEnd(md[:strings.LastIndexByte(md[:start], '\n')+1], false, cuts+1)
		}
		for {
			cut, closers := closeInline(md, start)
			if cut >= len(md) {
				return md + closers
			}
			md = strings.TrimRightFunc(md[:cut], unicode.IsSpace)
			if len(md) <= start || markersOnly(md[strings.LastIndexByte(md, '\n')+1:]) {
				// Cut back to another block, or to a line that may now
				// read as one: read the blocks again.
				return closeEnd(md, false, cuts+1)
			}
		}
	}
	return md
}

// mdParser reads Markdown's blocks as adapters/markup does (CommonMark);
// the inline content is scanned here, so the parser reads none of it,
// which makes it several times faster on every delta. A goldmark parser is
// safe for concurrent use and holds no per-document state.
var mdParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// normalize is adapters/markup's: valid UTF-8, "\n" line ends, no NUL.
func normalize(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = strings.ReplaceAll(md, "\r", "\n")
	return strings.ReplaceAll(md, "\x00", "\uFFFD")
}

// lastLeaf is the block that holds the end of the text: the last block,
// the last of its children for a container (list, item, quote).
func lastLeaf(doc ast.Node) ast.Node {
	n := doc
	for c := n.LastChild(); c != nil && c.Type() == ast.TypeBlock; c = n.LastChild() {
		n = c
	}
	return n
}

// markersOnly reports whether a last line is nothing but block markers,
// which the next characters may make a list item, a heading, a rule or a
// heading's underline: "-", "* ", "1.", "#", ">", "---", "==".
func markersOnly(line string) bool {
	s := strings.TrimLeft(line, " \t")
	if s == "" {
		return false
	}
	for s != "" {
		s = strings.TrimLeft(s, " \t")
		switch {
		case s == "":
			return true
		case strings.IndexByte(">-*+=#_~`|:", s[0]) >= 0:
			s = s[1:]
		case s[0] >= '0' && s[0] <= '9':
			d := strings.TrimLeft(s, "0123456789")
			if d == "" || (d[0] != '.' && d[0] != ')') {
				return false
			}
			s = d[1:]
		default:
			return false
		}
	}
	return true
}

// fenceOnly reports whether a line is (after quote markers and
// indentation) only backticks or tildes: maybe a closing fence.
func fenceOnly(line string) bool {
	s := strings.TrimLeft(line, " \t>")
	return s != "" && strings.Trim(s, "`~ \t") == ""
}
