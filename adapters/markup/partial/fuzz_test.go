package partial_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/markup/partial"
)

// shownFlavor is one renderer with the reader of what a user sees of it.
type shownFlavor struct {
	name   string
	render func(string) string
	read   func(string) (markuptest.Rendered, error)
}

var shownFlavors = []shownFlavor{
	{"telegram", markup.TelegramV2, markuptest.TelegramV2},
	{"discord", markup.Discord, func(s string) (markuptest.Rendered, error) { return markuptest.Discord(s), nil }},
	{"slack", markup.Slack, func(s string) (markuptest.Rendered, error) { return markuptest.Slack(s, true), nil }},
	{"plain", markup.Plain, readPlain},
	{"html", markup.HTML, markuptest.HTML},
}

// rawMarkers are the characters that show when markup is left open.
const rawMarkers = "*_~`[]<"

// countMarkers counts each of rawMarkers in s.
func countMarkers(s string) [len(rawMarkers)]int {
	var n [len(rawMarkers)]int
	for i := range len(rawMarkers) {
		n[i] = strings.Count(s, rawMarkers[i:i+1])
	}
	return n
}

// refDefinition finds a link reference definition, which makes a
// "[label]" written before it a link: nothing partial can know.
var refDefinition = regexp.MustCompile(`(?m)^[ >]*\[[^\]]+\]:`)

// partialMarkdownProblem checks Markdown over every rune prefix of md in
// every flavour: it renders, the platform accepts it, and no marker shows
// more often than in the finished text's rendering (a marker shown raw in
// a partial that the finished text reads as markup is one shown too many).
// For a finished text with no raw marker and words on its last line,
// Markdown changes nothing that shows.
func partialMarkdownProblem(md string) string {
	meant, err := markuptest.TelegramV2(markup.TelegramV2(md))
	clean := err == nil && finishedClean(md, meant.Text)
	for _, fl := range shownFlavors {
		final, err := fl.read(fl.render(md))
		if err != nil {
			return "" // the renderer's own fuzz target covers this
		}
		want := countMarkers(final.Text)
		checkCounts := !refDefinition.MatchString(md) && !misread(fl, md, final)
		for k := 0; k <= len(md); k++ {
			if k < len(md) && !utf8.RuneStart(md[k]) {
				continue
			}
			p := partial.Markdown(md[:k])
			shown, err := fl.read(fl.render(p))
			if err != nil {
				return fl.name + ": the rendering of Markdown(" + q(md[:k]) + ") = " + q(p) + " is refused: " + err.Error()
			}
			got := countMarkers(shown.Text)
			for i := range got {
				if checkCounts && got[i] > want[i] && !misread(fl, p, shown) {
					return fl.name + ": Markdown(" + q(md[:k]) + ") = " + q(p) + " shows " + q(shown.Text) +
						": more " + rawMarkers[i:i+1] + " than the finished text shows: " + q(final.Text)
				}
			}
		}
		if clean {
			// Trailing white space is held back (in a code block too).
			if got, want := fl.render(partial.Markdown(md)), fl.render(strings.TrimRightFunc(md, unicode.IsSpace)); got != want {
				return fl.name + ": the finished " + q(md) + " renders as " + q(want) + ", its Markdown as " + q(got)
			}
		}
	}
	return ""
}

// misread reports whether Discord or Slack misreads the rendering of md
// (Discord has no escape inside code, Slack none at all): what the
// Markdown means is what Telegram, where everything is escaped, shows. A
// partial cannot be held to a misreading of the finished text, and the
// renderer's misreading of a partial is the renderer's (Telegram's reading
// of the same partial is still checked).
func misread(fl shownFlavor, md string, final markuptest.Rendered) bool {
	if fl.name != "discord" && fl.name != "slack" {
		return false
	}
	meant, err := markuptest.TelegramV2(markup.TelegramV2(md))
	return err != nil || squeeze(meant.Text) != squeeze(final.Text)
}

// finishedClean reports whether a finished text shows no raw marker (nor
// what Markdown holds back at an end: "&", "\", "|") and ends with a line
// with a letter, not a fence's (so no list number alone).
func finishedClean(md, shown string) bool {
	if strings.ContainsAny(shown, rawMarkers+"&\\|") || strings.ContainsAny(md, "\r\x00") || !utf8.ValidString(md) {
		return false
	}
	md = strings.TrimRightFunc(md, unicode.IsSpace)
	last := md[strings.LastIndexByte(md, '\n')+1:]
	if t := strings.TrimLeft(last, " >"); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
		return false // a fence's opening line (or closing) waits for its end
	}
	return strings.IndexFunc(last, unicode.IsLetter) >= 0
}

func q(s string) string {
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}

// partialMarkdownSeeds are finished texts with every construct Markdown
// closes or holds back.
var partialMarkdownSeeds = []string{
	"**bold** and *it* and _it_ and ~~gone~~ and `code`.",
	"Some **bold *nested* text** then ***both***.",
	"See [the docs](https://example.com/a_(b)?x=1&y=2) and ![pic](https://e.com/p.png).",
	"```go\nfunc f() {\n\tfmt.Println(\"**not bold**\")\n}\n```\nAfter the code.",
	"~~~\ncode ``` inside\n~~~\n",
	"> quoted **bold** line\n> and `code`\n\n- item *one*\n- item **two**\n  1. sub [link](http://x.y)\n",
	"# Title\n\nSetext\n---\n\nText with 2*3*4 and snake_case_name.",
	"Use `` `backticks` `` and <https://example.com/x_y> and AT&amp;T.",
	"|a|b|\n|-|-|\n|1|2|\n",
	"Emoji 😀 **bold 👩‍👩‍👧‍👦** and _ital 🇫🇷_",
	"Escapes \\*not\\* \\[link\\] and back\\\\slash.",
	"[ref] and [ref][x]\n\n[x]: https://e.com",
	"*a **b** c* and **a *b* c**",
	"a * b * c and a*b*c and _a_b_",
}

// FuzzPartialMarkdown checks partial.Markdown on every prefix of any text
// (see partialMarkdownProblem). Run it with
// go test -run '^$' -fuzz '^FuzzPartialMarkdown$' ./adapters/markup/partial.
func FuzzPartialMarkdown(f *testing.F) {
	for _, s := range partialMarkdownSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if len(md) > 1024 {
			return // every prefix is rendered five times: keep a run short
		}
		if p := partialMarkdownProblem(md); p != "" {
			t.Fatal(p)
		}
	})
}

func TestPartialMarkdownSeeds(t *testing.T) {
	for _, s := range partialMarkdownSeeds {
		if p := partialMarkdownProblem(s); p != "" {
			t.Error(p)
		}
	}
}

// readPlain reads Plain's text; ">" (a quote's marker) is left out.
func readPlain(s string) (markuptest.Rendered, error) {
	return markuptest.Rendered{Text: strings.ReplaceAll(s, ">", "")}, nil
}

// squeeze drops all white space (and zero-width spaces, which only keep
// markers apart).
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '\u200b' {
			return -1
		}
		return r
	}, s)
}
