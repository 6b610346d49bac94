package markup_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
)

// renderCase is one Markdown input with what each renderer must make of it.
type renderCase struct {
	name                     string
	md                       string
	telegram, discord, slack string
	plain                    string
	// visible is what a user reads on every rich platform.
	visible     string
	skipVisible bool
}

var renderCases = []renderCase{
	{name: "empty", md: ""},
	{name: "only space", md: "  \n\t "},
	{
		name: "plain sentence", md: "Plain text.",
		telegram: `Plain text\.`, discord: "Plain text.", slack: "Plain text.", plain: "Plain text.",
		visible: "Plain text.",
	},
	{
		name: "bold and italic", md: "**bold** and *it* and _it_",
		telegram: "*bold* and _it_ and _it_", discord: "**bold** and *it* and *it*",
		slack: "*bold* and _it_ and _it_", plain: "bold and it and it",
		visible: "bold and it and it",
	},
	{
		name: "nested emphasis", md: "**bold *nested* bold** ***both***",
		telegram: "*bold _nested_ bold* _*both*_", discord: "**bold *nested* bold** ***both***",
		slack: "*bold _nested_ bold* _*both*_", plain: "bold nested bold both",
		visible: "bold nested bold both",
	},
	{
		name: "emphasis in emphasis of the same kind", md: "*a _b_ c*",
		telegram: "_a b c_", discord: "*a b c*", slack: "_a b c_", plain: "a b c",
		visible: "a b c",
	},
	{
		// "_a__b_" would be read by Telegram as an underline.
		name: "adjacent italics merge", md: "*a*_b_",
		telegram: "_ab_", discord: "*ab*", slack: "_ab_", plain: "ab",
		visible: "ab",
	},
	{
		// "**a***b*" would read as bold "a*" on Discord.
		name: "bold then italic", md: "**a***b* *c***d**",
		telegram: "*a*_b_ _c_*d*", discord: "**a**\u200b*b* *c*\u200b**d**",
		slack: "*a*_b_ _c_*d*", plain: "ab cd",
		visible: "ab cd", skipVisible: true, // Discord shows the zero-width spaces
	},
	{
		// "***a** b*" would read as bold "*a" on Discord.
		name: "bold at the start of italic", md: "***a** b* ***c* d**",
		telegram: "_*a* b_ *_c_ d*", discord: "*\u200b**a** b* ***c* d**",
		slack: "_*a* b_ *_c_ d*", plain: "a b c d",
		visible: "a b c d", skipVisible: true,
	},
	{
		name: "strikethrough", md: "~~gone~~ and ~one~",
		telegram: "~gone~ and ~one~", discord: "~~gone~~ and ~~one~~",
		slack: "~gone~ and ~one~", plain: "gone and one",
		visible: "gone and one",
	},
	{
		// CommonMark: * may emphasise inside a word, so 3 is italic.
		name: "star inside a number", md: "2*3*4",
		telegram: "2_3_4", discord: "2*3*4", slack: "2\u200b_3_\u200b4", plain: "234",
		visible: "234",
	},
	{
		name: "underscores in words", md: "snake_case_name",
		telegram: `snake\_case\_name`, discord: `snake\_case\_name`,
		slack: "snake_case_name", plain: "snake_case_name",
		visible: "snake_case_name",
	},
	{
		name: "lone stars", md: "a * b * c and **unclosed",
		telegram: `a \* b \* c and \*\*unclosed`, discord: `a \* b \* c and \*\*unclosed`,
		slack: "a * b * c and **unclosed", plain: "a * b * c and **unclosed",
		visible: "a * b * c and **unclosed",
	},
	{
		name: "code with special characters", md: "`a_b*c\\d` and ``x`y``",
		telegram: "`a_b*c\\\\d` and `x\\`y`", discord: "`a_b*c\\d` and ``x`y``",
		slack: "`a_b*c\\d` and ```x`y```", plain: "a_b*c\\d and x`y",
		visible: "a_b*c\\d and x`y",
	},
	{
		name: "code starting with a backtick", md: "`` `x` ``",
		telegram: "`\\`x\\``", discord: "`` `x` ``", slack: "```\u200b`x`\u200b```", plain: "`x`",
		visible: "`x`",
	},
	{
		name: "escaped markdown", md: "\\*not it\\* x\\` 1\\\\2",
		telegram: "\\*not it\\* x\\` 1\\\\2", discord: "\\*not it\\* x\\` 1\\\\2",
		slack: "*not it* x` 1\\2", plain: "*not it* x` 1\\2",
		visible: "*not it* x` 1\\2",
		// Slack has no escapes: "*not it*" shows bold there.
		skipVisible: true,
	},
	{
		name: "link with emphasis and parentheses", md: "[a *b*](https://e.com/p?q=1&r=(2))",
		telegram: `[a _b_](https://e.com/p?q=1&r=(2\))`, discord: "[a *b*](https://e.com/p?q=1&r=%282%29)",
		slack: "<https://e.com/p?q=1&amp;r=(2)|a b>", plain: "a b (https://e.com/p?q=1&r=(2))",
		visible: "a b",
	},
	{
		name: "backslash in a URL", md: `[t](https://e.com/a\\b)`,
		telegram: `[t](https://e.com/a\\b)`, discord: "[t](https://e.com/a%5Cb)",
		slack: `<https://e.com/a\b|t>`, plain: `t (https://e.com/a\b)`,
		visible: "t",
	},
	{
		name: "relative link", md: "see [docs](/docs_x)",
		telegram: `see docs \(/docs\_x\)`, discord: `see docs (/docs\_x)`,
		slack: "see docs (/docs_x)", plain: "see docs (/docs_x)",
		visible: "see docs (/docs_x)",
	},
	{
		name: "link without text", md: "[](https://e.com)",
		telegram: `[https://e\.com](https://e.com)`, discord: "[https://e.com](https://e.com)",
		slack: "<https://e.com>", plain: "https://e.com",
		visible: "https://e.com",
	},
	{
		name: "image", md: "![a cat](https://e.com/cat.png)",
		telegram: "[a cat](https://e.com/cat.png)", discord: "[a cat](https://e.com/cat.png)",
		slack: "<https://e.com/cat.png|a cat>", plain: "a cat (https://e.com/cat.png)",
		visible: "a cat",
	},
	{
		name: "autolinks", md: "<https://e.com/x_y> <me@e.com>",
		telegram: `https://e\.com/x\_y me@e\.com`, discord: "https://e.com/x_y me@e.com",
		slack: "<https://e.com/x_y> <mailto:me@e.com|me@e.com>", plain: "https://e.com/x_y me@e.com",
		visible: "https://e.com/x_y me@e.com",
	},
	{
		name: "headings", md: "# Title\n\n## **Bold** title",
		telegram: "*Title*\n\n*Bold title*", discord: "**Title**\n\n**Bold title**",
		slack: "*Title*\n\n*Bold title*", plain: "Title\n\nBold title",
		visible: "Title\n\nBold title",
	},
	{
		name: "lists", md: "- a\n- b\n  1. x\n  2. y\n\n3. three",
		telegram: "• a\n• b\n  1\\. x\n  2\\. y\n\n3\\. three", discord: "- a\n- b\n  1. x\n  2. y\n\n3. three",
		slack: "• a\n• b\n  1. x\n  2. y\n\n3. three", plain: "• a\n• b\n  1. x\n  2. y\n\n3. three",
		visible: "• a\n• b\n  1. x\n  2. y\n\n3. three",
	},
	{
		name: "loose list item with two paragraphs", md: "- first\n\n  more\n- second",
		telegram: "• first\n  more\n• second", discord: "- first\n  more\n- second",
		slack: "• first\n  more\n• second", plain: "• first\n  more\n• second",
		visible: "• first\n  more\n• second",
	},
	{
		name: "block quote", md: "> quoted *it*\n>\n> two",
		telegram: ">quoted _it_\n>\n>two", discord: "> quoted *it*\n>\n> two",
		slack: "> quoted _it_\n>\n> two", plain: "> quoted it\n>\n> two",
		visible: "quoted it\n\ntwo",
	},
	{
		name: "quote in a list item", md: "1. > inside",
		telegram: ">1\\. inside", discord: "> 1. inside", slack: "> 1. inside", plain: "> 1. inside",
		visible: "1. inside",
	},
	{
		name: "fenced code", md: "```py\nprint('a`b\\\\')\n```",
		telegram: "```py\nprint('a\\`b\\\\\\\\')\n```", discord: "```py\nprint('a`b\\\\')\n```",
		slack: "```\nprint('a`b\\\\')\n```", plain: "print('a`b\\\\')",
		// Telegram keeps the line end before the closing fence in the code.
		skipVisible: true,
	},
	{
		name: "code containing a fence", md: "````\n```\n````",
		telegram: "```\n\\`\\`\\`\n```", discord: "```\n``\u200b`\n```",
		slack: "```\n``\u200b`\n```", plain: "```",
		skipVisible: true,
	},
	{
		name: "code block in a quote", md: "> ```\n> x = 1\n> ```",
		telegram: ">`x = 1`", discord: "> ```\n> x = 1\n> ```", slack: "> `x = 1`", plain: "> x = 1",
		visible: "x = 1",
	},
	{name: "empty code block", md: "```\n\n```"},
	{
		name: "line breaks", md: "a  \nb\\\nc\nd",
		telegram: "a\nb\nc\nd", discord: "a\nb\nc\nd", slack: "a\nb\nc\nd", plain: "a\nb\nc\nd",
		visible: "a\nb\nc\nd",
	},
	{
		name: "thematic break", md: "a\n\n---\n\nb",
		telegram: "a\n\n———\n\nb", discord: "a\n\n———\n\nb", slack: "a\n\n———\n\nb", plain: "a\n\n———\n\nb",
		visible: "a\n\n———\n\nb",
	},
	{
		name: "HTML and entities", md: "<b>hi</b> & &amp; &copy; &#x1F600;",
		telegram: `<b\>hi</b\> & & © 😀`, discord: `\<b>hi\</b> & & © 😀`,
		slack: "&lt;b&gt;hi&lt;/b&gt; &amp; &amp; © 😀", plain: "<b>hi</b> & & © 😀",
		visible: "<b>hi</b> & & © 😀",
	},
	{
		name: "table as text", md: "|a|b|\n|-|-|\n|1|2|",
		telegram: "\\|a\\|b\\|\n\\|\\-\\|\\-\\|\n\\|1\\|2\\|", discord: "\\|a\\|b\\|\n\\|-\\|-\\|\n\\|1\\|2\\|",
		slack: "|a|b|\n|-|-|\n|1|2|", plain: "|a|b|\n|-|-|\n|1|2|",
		visible: "|a|b|\n|-|-|\n|1|2|",
	},
	{
		name: "reserved characters", md: "Price: $5.00 (approx.) = 5 + 0! #tag {x} |y| ~z > w",
		telegram: `Price: $5\.00 \(approx\.\) \= 5 \+ 0\! \#tag \{x\} \|y\| \~z \> w`,
		discord:  `Price: $5.00 (approx.) = 5 + 0! #tag {x} \|y\| \~z > w`,
		slack:    "Price: $5.00 (approx.) = 5 + 0! #tag {x} |y| ~z &gt; w",
		plain:    "Price: $5.00 (approx.) = 5 + 0! #tag {x} |y| ~z > w",
		visible:  "Price: $5.00 (approx.) = 5 + 0! #tag {x} |y| ~z > w",
	},
	{
		name: "block markup meant literally", md: "\\# not a heading\n\\> not a quote\n1\\. not a list\n\\- not a list",
		telegram: "\\# not a heading\n\\> not a quote\n1\\. not a list\n\\- not a list",
		discord:  "\\# not a heading\n\\> not a quote\n1\\. not a list\n\\- not a list",
		slack:    "# not a heading\n&gt; not a quote\n1. not a list\n- not a list",
		plain:    "# not a heading\n> not a quote\n1. not a list\n- not a list",
		visible:  "# not a heading\n> not a quote\n1. not a list\n- not a list",
	},
	{
		name: "line ends and NUL", md: "a\r\nb\x00c",
		telegram: "a\nb\uFFFDc", discord: "a\nb\uFFFDc", slack: "a\nb\uFFFDc", plain: "a\nb\uFFFDc",
		visible: "a\nb\uFFFDc",
	},
	{
		name: "bare URL in Discord text", md: "see https://e.com/a_b_c now_",
		telegram: `see https://e\.com/a\_b\_c now\_`, discord: `see https://e.com/a_b_c now\_`,
		slack: "see https://e.com/a_b_c now_", plain: "see https://e.com/a_b_c now_",
		visible: "see https://e.com/a_b_c now_",
	},
}

func TestRenderers(t *testing.T) {
	t.Parallel()
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, c.telegram, markup.TelegramV2(c.md), "TelegramV2")
			require.Equal(t, c.discord, markup.Discord(c.md), "Discord")
			require.Equal(t, c.slack, markup.Slack(c.md), "Slack")
			require.Equal(t, c.plain, markup.Plain(c.md), "Plain")
		})
	}
}

// TestRenderedAsMeant reads each platform's output back the way the
// platform shows it: Telegram accepts it, and every platform shows the
// same text.
func TestRenderedAsMeant(t *testing.T) {
	t.Parallel()
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tg, err := markuptest.TelegramV2(markup.TelegramV2(c.md))
			require.NoError(t, err, "Telegram would refuse %q", markup.TelegramV2(c.md))
			if c.skipVisible {
				return
			}
			require.Equal(t, c.visible, tg.Text, "Telegram")
			require.Equal(t, c.visible, markuptest.Discord(markup.Discord(c.md)).Text, "Discord")
			require.Equal(t, c.visible, markuptest.Slack(markup.Slack(c.md), true).Text, "Slack")
		})
	}
}

func TestStylesReachThePlatform(t *testing.T) {
	t.Parallel()
	const md = "**bold**, *italic*, ~~struck~~, `code` and a [link](https://example.com/a_(1))\n\n> quoted"
	for name, got := range map[string]markuptest.Rendered{
		"telegram": mustTelegram(t, markup.TelegramV2(md)),
		"discord":  markuptest.Discord(markup.Discord(md)),
		"slack":    markuptest.Slack(markup.Slack(md), true),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, "bold, italic, struck, code and a link\n\nquoted", got.Text)
			require.Equal(t, []string{"bold"}, got.Styled(markuptest.Bold))
			require.Equal(t, []string{"italic"}, got.Styled(markuptest.Italic))
			require.Equal(t, []string{"struck"}, got.Styled(markuptest.Strike))
			require.Equal(t, []string{"code"}, got.Styled(markuptest.Code))
			require.Equal(t, []string{"quoted"}, got.Styled(markuptest.Quote))
			u := got.LinkTo("link")
			require.NotEmpty(t, u, "no link shows %q", "link")
			if name == "discord" {
				require.Equal(t, "https://example.com/a_%281%29", u)
			} else {
				require.Equal(t, "https://example.com/a_(1)", u)
			}
		})
	}
}

func TestPreKeepsItsLanguage(t *testing.T) {
	t.Parallel()
	got := mustTelegram(t, markup.TelegramV2("```go\nx := `a`\n```"))
	require.Len(t, got.Spans, 1)
	require.Equal(t, markuptest.Pre, got.Spans[0].Style)
	require.Equal(t, "go", got.Spans[0].Language)
	require.Equal(t, "x := `a`", strings.TrimSpace(got.Text))

	d := markuptest.Discord(markup.Discord("```go\nx := 1\n```"))
	require.Equal(t, []markuptest.Span{{Style: markuptest.Pre, Start: 0, End: 6, Language: "go"}}, d.Spans)

	// A fence line is no place for an arbitrary info string.
	require.Equal(t, "```\nx\n```", markup.TelegramV2("~~~a\\b`c\nx\n~~~"))
}

func TestEscapeDiscord(t *testing.T) {
	t.Parallel()
	require.Equal(t, `\# a \*b\* c\_d https://e.com/x_y`+"\n"+`1\. \<@1>`, markup.EscapeDiscord("# a *b* c_d https://e.com/x_y\n1. <@1>"))
	require.Equal(t, "a *b*", markuptest.Discord(markup.EscapeDiscord("a *b*")).Text)
}

func mustTelegram(t *testing.T, text string) markuptest.Rendered {
	t.Helper()
	r, err := markuptest.TelegramV2(text)
	require.NoError(t, err, "Telegram would refuse %q", text)
	return r
}

// FuzzTelegramV2 checks that whatever Markdown comes in, Telegram accepts
// what TelegramV2 makes of it, and that no renderer panics or writes
// invalid UTF-8. Run it with go test -fuzz=FuzzTelegramV2 ./adapters/markup.
func FuzzTelegramV2(f *testing.F) {
	for _, c := range renderCases {
		f.Add(c.md)
	}
	for _, s := range []string{
		"*a **b** c*", "_a_b_", "__a__", "***a***b", "[x](<a b>)", "[*x*](u)", "![*a*](https://x)",
		"> # h\n> - l\n>   ```\n>   c\n>   ```", "- > q\n  > r", "`\\`", "\\", "~~~\n```\n~~~",
		"<!-- c -->", "a\\\nb", "**a\n\nb**", "[a\n](b)", "1. ```\n   x\n   ```", "&#0; &#x110000; &bogus;",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := markup.TelegramV2(md)
		if _, err := markuptest.TelegramV2(out); err != nil {
			t.Fatalf("Telegram would refuse TelegramV2(%q) = %q: %v", md, out, err)
		}
		for name, r := range map[string]func(string) string{
			"TelegramV2": markup.TelegramV2, "Discord": markup.Discord, "Slack": markup.Slack, "Plain": markup.Plain,
		} {
			if s := r(md); !utf8.ValidString(s) {
				t.Fatalf("%s(%q) is not valid UTF-8: %q", name, md, s)
			}
		}
	})
}
