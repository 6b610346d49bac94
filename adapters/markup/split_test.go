package markup_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
)

// richFlavors are the flavors with markup.
var richFlavors = flavors[:3]

// checkParts requires what every split must give: parts within limit that
// the platform accepts and that together show what the whole shows. It
// returns each part as the platform shows it.
func checkParts(t *testing.T, fc flavorCase, md string, limit int) []markuptest.Rendered {
	t.Helper()
	require.Empty(t, splitProblem(fc, md, limit), "%s, limit %d", fc.name, limit)
	var out []markuptest.Rendered
	for _, p := range fc.split(md, limit) {
		r, err := fc.read(p.Text)
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

func TestSplitKeepsBoldParagraphs(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, "**Point %d.** Some text after it.\n\n", i)
	}
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := checkParts(t, fc, b.String(), 500)
			require.Greater(t, len(parts), 3)
			seen := 0
			for i, p := range parts {
				bold := p.Styled(markuptest.Bold)
				require.NotEmpty(t, bold, "part %d shows no bold: %q", i, p.Text)
				for _, s := range bold {
					require.Regexp(t, `^Point \d+\.$`, s, "a bold span cut in part %d", i)
					require.Contains(t, p.Text, s+" Some text after it.", "a paragraph cut in part %d", i)
				}
				seen += len(bold)
			}
			require.Equal(t, 60, seen, "every paragraph, whole, in one part")
		})
	}
}

func TestSplitCodeBlock(t *testing.T) {
	t.Parallel()
	var code strings.Builder
	for i := range 150 {
		fmt.Fprintf(&code, "print(\"line %d: a`b\\\\c & <d> *e* _f_\")\n", i)
	}
	src := strings.TrimSuffix(code.String(), "\n")
	md := "Here it is:\n\n```python\n" + src + "\n```\n\nThat was *the code*."
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := checkParts(t, fc, md, 1000)
			var pieces []string
			for i, p := range parts {
				pre := spansOf(p, markuptest.Pre)
				if len(pre) == 0 {
					continue
				}
				require.Len(t, pre, 1, "part %d", i)
				if fc.name != "slack" { // Slack's pre has no language
					require.Equal(t, "python", pre[0].Language, "part %d", i)
				}
				pieces = append(pieces, strings.TrimSuffix(p.Text[pre[0].Start:pre[0].End], "\n"))
			}
			require.Greater(t, len(pieces), 2, "the code goes over several parts")
			got := strings.Join(pieces, "\n")
			if fc.name == "discord" {
				got = strings.ReplaceAll(got, "\u200b", "") // keeps ``` runs off the fence
			}
			require.Equal(t, src, got, "the code comes back whole")
		})
	}
	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		var got []string
		for _, p := range markup.SplitPlain(md, 1000) {
			got = append(got, p.Text)
		}
		require.Contains(t, strings.Join(got, "\n"), src)
	})
}

func TestSplitCodeLineLongerThanAPart(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("x = `a` + \"\\\\\" & <b>; ", 150)
	md := "```go\n" + line + "\n```"
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := checkParts(t, fc, md, 700)
			require.Greater(t, len(parts), 3)
			var got strings.Builder
			for i, p := range parts {
				pre := spansOf(p, markuptest.Pre)
				require.Len(t, pre, 1, "every part shows code as code: part %d %q", i, p.Text)
				if fc.name != "slack" {
					require.Equal(t, "go", pre[0].Language)
				}
				got.WriteString(strings.TrimSuffix(p.Text[pre[0].Start:pre[0].End], "\n"))
			}
			require.Equal(t, line, strings.ReplaceAll(got.String(), "\u200b", ""))
		})
	}
}

func TestSplitList(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 80 {
		fmt.Fprintf(&b, "- item **%d** with [a link](https://example.com/%d) in it\n", i, i)
	}
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := checkParts(t, fc, b.String(), 400)
			require.Greater(t, len(parts), 3)
			items := 0
			for _, p := range parts {
				for _, l := range strings.Split(p.Text, "\n") {
					require.Regexp(t, `^• item \d+ with a link in it$`, l, "an item cut")
					items++
				}
				require.NotEmpty(t, p.Styled(markuptest.Bold))
				require.NotEmpty(t, p.Styled(markuptest.Link))
			}
			require.Equal(t, 80, items)
		})
	}
}

func TestSplitQuote(t *testing.T) {
	t.Parallel()
	md := strings.Repeat("> A quoted line with *style* in it.\n> And another one.\n>\n", 40)
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := checkParts(t, fc, md, 300)
			require.Greater(t, len(parts), 3)
			for i, p := range parts {
				require.Equal(t, []string{p.Text}, p.Styled(markuptest.Quote), "part %d is all quote", i)
				require.NotEmpty(t, p.Styled(markuptest.Italic))
			}
		})
	}
}

func TestSplitGiantParagraph(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("Some **bold** words, some `code` and [a link](https://e.com/x). ", 60)
	giantSpan := "**" + strings.Repeat("all of this is bold ", 100) + "**"
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := checkParts(t, fc, words, 500)
			require.Greater(t, len(parts), 3)
			for i, p := range parts {
				// Cut between words, outside spans: the style stays.
				require.NotEmpty(t, p.Styled(markuptest.Bold), "part %d", i)
				for _, s := range p.Styled(markuptest.Bold) {
					require.Equal(t, "bold", s)
				}
			}
			// One span longer than a part: its text goes, cut at spaces,
			// without the style it cannot keep.
			parts = checkParts(t, fc, giantSpan, 500)
			require.Greater(t, len(parts), 3)
			for _, p := range parts {
				require.False(t, strings.HasPrefix(p.Text, " ") || strings.HasSuffix(p.Text, " "))
				require.NotContains(t, p.Text, "bol\n")
			}
		})
	}
}

func TestSplitTelegramCountsUTF16(t *testing.T) {
	t.Parallel()
	// 😀 is two UTF-16 units: a limit in the middle of one must not cut it.
	for _, md := range []string{
		strings.Repeat("😀", 300),
		"a" + strings.Repeat("😀", 300),
		strings.Repeat("a😀 ", 200),
		strings.Repeat("**😀😀** ", 100),
		strings.Repeat("👩‍👩‍👧‍👦", 60),
	} {
		for _, limit := range []int{101, 100, 64} {
			parts := checkParts(t, flavors[0], md, limit)
			require.Greater(t, len(parts), 1)
			for _, p := range markup.SplitTelegram(md, limit) {
				require.LessOrEqual(t, utf16Len(p.Text), limit)
				require.NotContains(t, p.Text, "\uFFFD")
			}
		}
	}
	// The family emoji is one character: cuts fall between families.
	for _, p := range markup.SplitTelegram(strings.Repeat("👩‍👩‍👧‍👦", 60), 100) {
		require.Equal(t, 0, len([]rune(p.Text))%7, "a family cut apart: %q", p.Text)
	}
}

func TestSplitCRLF(t *testing.T) {
	t.Parallel()
	lf := strings.Repeat("**Bold** line one\nline two\n\n- item\n- item\n\n", 30)
	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	for _, fc := range flavors {
		require.Equal(t, fc.split(lf, 300), fc.split(crlf, 300), fc.name)
		for _, p := range fc.split(crlf, 300) {
			require.NotContains(t, p.Text, "\r")
		}
	}
}

func TestSplitLinkNearACut(t *testing.T) {
	t.Parallel()
	const url = "https://example.com/a_(b)?c=1&d=2"
	for shift := range 40 {
		md := strings.Repeat("x", 60+shift) + " " + strings.Repeat("word ", 20) + "[the link text](" + url + ") " + strings.Repeat("more ", 30)
		for _, fc := range richFlavors {
			parts := checkParts(t, fc, md, 150)
			found := 0
			for _, p := range parts {
				if u := p.LinkTo("the link text"); u != "" {
					found++
					if fc.name == "discord" {
						require.Equal(t, "https://example.com/a_%28b%29?c=1&d=2", u)
					} else {
						require.Equal(t, url, u)
					}
				}
			}
			require.Equal(t, 1, found, "%s, shift %d: the link whole in one part", fc.name, shift)
		}
	}
}

func TestSplitSpanOverLines(t *testing.T) {
	t.Parallel()
	// A span over line breaks cannot be cut at them: paragraphs longer
	// than a part are cut at the line ends outside the spans.
	md := strings.Repeat("plain line one\nplain line two\n**first line\nsecond line\nthird line**\n"+
		"plain line three\n_one\ntwo_ plain\nplain line four\n\n", 10)
	for _, fc := range richFlavors {
		if fc.name == "slack" {
			continue // Slack reads spans within a line only
		}
		for _, limit := range []int{64, 80, 100} {
			parts := checkParts(t, fc, md, limit)
			require.Greater(t, len(parts), 10)
			for _, p := range parts {
				for _, b := range p.Styled(markuptest.Bold) {
					require.Equal(t, "first line\nsecond line\nthird line", b, "%s, limit %d", fc.name, limit)
				}
				for _, i := range p.Styled(markuptest.Italic) {
					require.Equal(t, "one\ntwo", i, "%s, limit %d", fc.name, limit)
				}
			}
		}
	}
}

func TestSplitSlackLiteralMarkers(t *testing.T) {
	t.Parallel()
	// Slack has no escapes: "\*" in Markdown is a "*" that Slack pairs
	// with the next one. A cut between the two would show both.
	for shift := range 30 {
		md := strings.Repeat("w", shift) + " " + strings.Repeat("word ", 12) + "\\*not meant " + strings.Repeat("as bold ", 6) + "here\\* " + strings.Repeat("tail ", 20)
		whole := markuptest.Slack(markup.Slack(md), true)
		var joined strings.Builder
		for _, p := range markup.SplitSlack(md, 100) {
			require.LessOrEqual(t, len([]rune(p.Text)), 100)
			joined.WriteString(markuptest.Slack(p.Text, true).Text)
		}
		require.Equal(t, squeeze(whole.Text), squeeze(joined.String()), "shift %d", shift)
	}
}

func TestSplitNothing(t *testing.T) {
	t.Parallel()
	for _, fc := range flavors {
		for _, md := range []string{"", " \n\t", "```\n\n```"} {
			require.Empty(t, fc.split(md, 100), "%s %q", fc.name, md)
		}
	}
}

func TestSplitWholeWhenItFits(t *testing.T) {
	t.Parallel()
	const md = "**Hi** there, see [this](https://e.com/x).\n\n> quoted `code`\n\n```go\nx := 1\n```"
	for _, limit := range []int{4096, 0, -1} {
		require.Equal(t, []markup.Part{{
			Text:  markup.TelegramV2(md),
			Plain: "Hi there, see this (https://e.com/x).\n\n> quoted code\n\nx := 1",
		}}, markup.SplitTelegram(md, limit))
	}
	require.Equal(t, []markup.Part{{
		Text:  markup.Discord(md),
		Plain: "Hi there, see this (https://e.com/x).\n\n> quoted code\n\nx := 1",
	}}, markup.SplitDiscord(md, 2000))
	require.Equal(t, []markup.Part{{
		Text:  markup.Slack(md),
		Plain: "Hi there, see this (https://e.com/x).\n\n> quoted code\n\nx := 1",
	}}, markup.SplitSlack(md, 4000))
	require.Equal(t, []markup.Part{{Text: markup.Plain(md), Plain: markup.Plain(md)}}, markup.SplitPlain(md, 4000))
}

func TestSplitPlainIsTheVisibleText(t *testing.T) {
	t.Parallel()
	md := strings.Repeat("**Bold** and _it_, `a*b`, 1.5 (x) & <y> [link](https://e.com/p_(q)) "+
		"<me@e.com> ~~gone~~\n\n> quoted *line*\n\n- item\n\n", 12)
	for _, fc := range richFlavors {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			parts := fc.split(md, 500)
			require.Greater(t, len(parts), 1)
			for _, p := range parts {
				shown, err := fc.read(p.Text)
				require.NoError(t, err)
				// Plain is what the platform shows, but links keep their
				// URL and quotes their marker.
				plain := strings.NewReplacer(" (https://e.com/p_(q))", "", " (https://e.com/p_%28q%29)", "", "\n> ", "\n").Replace("\n" + p.Plain)
				require.Equal(t, squeeze(shown.Text), squeeze(plain))
				require.Contains(t, p.Plain, "Bold and it, a*b, 1.5 (x) & <y> link (https://e.com/p_")
				require.NotContains(t, p.Plain, "\\")
				require.NotContains(t, p.Plain, "&amp;")
			}
		})
	}
}

func TestSplitPlainFitsTheLimit(t *testing.T) {
	t.Parallel()
	// ">" on Telegram, "> " in plain text: a part of quote lines keeps ">".
	md := strings.Repeat("> q\n", 300)
	parts := markup.SplitTelegram(md, 100)
	for _, p := range parts {
		require.LessOrEqual(t, utf16Len(p.Plain), 100)
	}
	require.True(t, strings.HasPrefix(parts[0].Plain, ">q\n>q"), parts[0].Plain)
	require.True(t, strings.HasPrefix(parts[len(parts)-1].Plain, "> q\n> q"), "a short part has room for the space")
}

func TestSplitSmallLimit(t *testing.T) {
	t.Parallel()
	md := strings.Repeat("word ", 100)
	for _, p := range markup.SplitDiscord(md, 10) {
		require.LessOrEqual(t, len(p.Text), markup.MinLimit, "a limit under MinLimit is MinLimit")
		require.Greater(t, len(p.Text), 10)
	}
	require.Len(t, markup.SplitDiscord(md, 0), 1, "0 is no limit")
}

func TestSplitPrefersBlocks(t *testing.T) {
	t.Parallel()
	// Two paragraphs fit a part, three do not: the cut is between the
	// second and the third, not inside the third.
	p := strings.Repeat("word ", 18) + "end."
	md := p + "\n\n" + p + "\n\n" + p
	parts := markup.SplitPlain(md, 250)
	require.Equal(t, []string{p + "\n\n" + p, p}, texts(parts))
	// Lines before words.
	md = p + "\n" + p + "\n" + p
	require.Equal(t, []string{p + "\n" + p, p}, texts(markup.SplitPlain(md, 250)))
}

func TestDiscordMarkersKeptApart(t *testing.T) {
	t.Parallel()
	// "**a***b*" reads as bold "a*" on Discord; "***a** b*" as bold "*a".
	r := markuptest.Discord(markup.Discord("**a***b* and ***c** d*"))
	require.Equal(t, []string{"a", "c"}, r.Styled(markuptest.Bold))
	require.Equal(t, []string{"b", "\u200bc d"}, r.Styled(markuptest.Italic))
}

func spansOf(r markuptest.Rendered, st markuptest.Style) []markuptest.Span {
	var out []markuptest.Span
	for _, sp := range r.Spans {
		if sp.Style == st {
			out = append(out, sp)
		}
	}
	return out
}

func texts(parts []markup.Part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

// reply is a typical reply: some bold, a list, a code block.
const reply = "Sure! Here is **how to do it**, step by step:\n\n" +
	"1. Install the tool with `go install example.com/tool@latest`.\n" +
	"2. Write a *config file* next to your code.\n" +
	"3. Run it, and check [the docs](https://example.com/docs) if it fails.\n\n" +
	"```go\nfunc main() {\n\tcfg, err := tool.Load(\"config.yaml\")\n\tif err != nil {\n\t\tlog.Fatal(err)\n\t}\n\ttool.Run(cfg)\n}\n```\n\n" +
	"If the build fails with **missing module**, run `go mod tidy` first and try again; the error names the module.\n\n" +
	"That's it. The tool reads the file on start, so restart it after a change. ~~No reload.~~ Ask if anything is unclear; I can show a test too."

func BenchmarkSplitTelegram(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		markup.SplitTelegram(reply, 4096)
	}
}

// BenchmarkSplitTelegramCut is the same reply cut into parts.
func BenchmarkSplitTelegramCut(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		markup.SplitTelegram(reply, 200)
	}
}
