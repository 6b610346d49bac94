package markuptest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup/markuptest"
)

func TestTelegramV2Refuses(t *testing.T) {
	t.Parallel()
	for text, problem := range map[string]string{
		`Price: 5.00`:      `Character '.' is reserved and must be escaped with the preceding '\'`,
		`a|b`:              `Character '|' is reserved and must be escaped with the preceding '\'`,
		`look! here`:       `Character '!' is reserved and must be escaped with the preceding '\'`,
		`x > y`:            `Character '>' is reserved and must be escaped with the preceding '\'`,
		`*never closed`:    "Can't find end of Bold entity at byte offset 0",
		"_a__b_":           "Can't find end of Italic entity at byte offset 5",
		"```go\ncode":      "Can't find end of PreCode entity at byte offset 0",
		`[text](http://x`:  "Can't find end of a URL at byte offset 7",
		`![emoji](http:x)`: "",
	} {
		_, err := markuptest.TelegramV2(text)
		if problem == "" {
			require.NoError(t, err, text)
			continue
		}
		var pe *markuptest.ParseError
		require.ErrorAs(t, err, &pe, text)
		require.Equal(t, problem, pe.Problem, text)
	}
}

func TestTelegramV2Reads(t *testing.T) {
	t.Parallel()
	r, err := markuptest.TelegramV2(">*Bold* _it_ __u__ ~s~ ||sp|| `c\\`d` [l](https://e.com/a\\)b)\n>q\nafter ```py\nx\n```")
	require.NoError(t, err)
	require.Equal(t, "Bold it u s sp c`d l\nq\nafter x\n", r.Text)
	require.Equal(t, []string{"Bold"}, r.Styled(markuptest.Bold))
	require.Equal(t, []string{"it"}, r.Styled(markuptest.Italic))
	require.Equal(t, []string{"u"}, r.Styled(markuptest.Underline))
	require.Equal(t, []string{"s"}, r.Styled(markuptest.Strike))
	require.Equal(t, []string{"sp"}, r.Styled(markuptest.Spoiler))
	require.Equal(t, []string{"c`d"}, r.Styled(markuptest.Code))
	require.Equal(t, "https://e.com/a)b", r.LinkTo("l"))
	require.Equal(t, []string{"Bold it u s sp c`d l\nq"}, r.Styled(markuptest.Quote))
	require.Equal(t, []string{"x\n"}, r.Styled(markuptest.Pre))
	require.True(t, r.Has(markuptest.Pre, "x\n"))
}

func TestDiscordReads(t *testing.T) {
	t.Parallel()
	r := markuptest.Discord("# Head\n> **b** *i* _u_ __un__ ~~s~~ ||sp|| `c` ``a`b``\n" +
		"- [l](https://e.com/x) https://e.com/y.\n\\*lit\\* a_b_c 2*3 \\<@1>\n```go\nx\n```")
	require.Equal(t, "Head\nb i u un s sp c a`b\n• l https://e.com/y.\n*lit* a_b_c 2*3 <@1>\nx", r.Text)
	require.Equal(t, []string{"Head"}, r.Styled(markuptest.Heading))
	require.Equal(t, []string{"b i u un s sp c a`b"}, r.Styled(markuptest.Quote))
	require.Equal(t, []string{"b"}, r.Styled(markuptest.Bold))
	require.Equal(t, []string{"i", "u"}, r.Styled(markuptest.Italic))
	require.Equal(t, []string{"un"}, r.Styled(markuptest.Underline))
	require.Equal(t, []string{"s"}, r.Styled(markuptest.Strike))
	require.Equal(t, []string{"sp"}, r.Styled(markuptest.Spoiler))
	require.Equal(t, []string{"c", "a`b"}, r.Styled(markuptest.Code))
	require.Equal(t, "https://e.com/x", r.LinkTo("l"))
	require.Equal(t, "https://e.com/y", r.LinkTo("https://e.com/y"), "a bare URL, without the full stop after it")
	require.Equal(t, []markuptest.Span{{Style: markuptest.Pre, Start: len(r.Text) - 1, End: len(r.Text), Language: "go"}},
		filter(r.Spans, markuptest.Pre))
}

func TestSlackReads(t *testing.T) {
	t.Parallel()
	r := markuptest.Slack("> *b* _i_ ~s~ `c` &lt;x&gt; &amp;\n<https://e.com/?a=1&amp;b=2|l> <@U1> <#C1|gen> <!here>\n"+
		"2*3*4 snake_case a\u200b*b*\u200bc ```pre```", true)
	require.Equal(t, "b i s c <x> &\nl @U1 #gen @here\n2*3*4 snake_case abc pre", r.Text)
	require.Equal(t, []string{"b i s c <x> &"}, r.Styled(markuptest.Quote))
	require.Equal(t, []string{"b", "b"}, r.Styled(markuptest.Bold))
	require.Equal(t, []string{"i"}, r.Styled(markuptest.Italic))
	require.Equal(t, []string{"s"}, r.Styled(markuptest.Strike))
	require.Equal(t, []string{"c"}, r.Styled(markuptest.Code))
	require.Equal(t, []string{"pre"}, r.Styled(markuptest.Pre))
	require.Equal(t, "https://e.com/?a=1&b=2", r.LinkTo("l"))

	plain := markuptest.Slack("*not bold* &amp; <https://e.com|link>", false)
	require.Equal(t, "*not bold* & link", plain.Text, "without mrkdwn only links and entities are read")
	require.Equal(t, []string{"link"}, plain.Styled(markuptest.Link))
}

func filter(spans []markuptest.Span, s markuptest.Style) []markuptest.Span {
	var out []markuptest.Span
	for _, sp := range spans {
		if sp.Style == s {
			out = append(out, sp)
		}
	}
	return out
}

func TestHTMLReads(t *testing.T) {
	t.Parallel()
	r, err := markuptest.HTML("<h2>Head</h2>\n<p>  <strong>b</strong> <em>i</em> <b>B</b> <i>I</i> <u>u</u> <del>d</del> <s>s</s>\n" +
		"<code>c &lt; d</code> <a href=\"https://e.com/x?a=1&amp;b=2\">l</a><br>next</p>\n" +
		"<blockquote>\n<p>q1</p>\n<p>q2</p>\n</blockquote>\n<ul>\n<li>one</li>\n<li>two<ul><li>inner</li></ul></li>\n</ul>\n" +
		"<pre><code class=\"language-py\">x = 1\n  y\n</code></pre>\n<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>" +
		"<script>alert(1)</script><p>end</p>")
	require.NoError(t, err)
	require.Equal(t, "Head\nb i B I u d s c < d l\nnext\nq1\nq2\none\ntwo\ninner\nx = 1\n  y\na\tb\n1\t2\nend", r.Text)
	require.Equal(t, []string{"Head"}, r.Styled(markuptest.Heading))
	require.Equal(t, []string{"b", "B"}, r.Styled(markuptest.Bold))
	require.Equal(t, []string{"i", "I"}, r.Styled(markuptest.Italic))
	require.Equal(t, []string{"u"}, r.Styled(markuptest.Underline))
	require.Equal(t, []string{"d", "s"}, r.Styled(markuptest.Strike))
	require.Equal(t, []string{"c < d"}, r.Styled(markuptest.Code))
	require.Equal(t, "https://e.com/x?a=1&b=2", r.LinkTo("l"))
	require.Equal(t, []string{"q1\nq2"}, r.Styled(markuptest.Quote))
	require.Equal(t, []string{"x = 1\n  y\n"}, r.Styled(markuptest.Pre))
	require.Equal(t, "py", filter(r.Spans, markuptest.Pre)[0].Language)
}

func TestUnsafeHTML(t *testing.T) {
	t.Parallel()
	for s, want := range map[string][]string{
		`<p>fine <a href="https://e.com">x</a> &lt;script&gt;</p>`: nil,
		`<SCRIPT>alert(1)</SCRIPT>`:                                {"<script>"},
		`<img src=x onerror=alert(1)>`:                             {"<img> loads x", "onerror= on <img>"},
		`<a href=" JaVa&#x09;Script:alert(1)">x</a>`:               {"javascript: URL in href of <a>"},
		`<a href="data:text/html,x">x</a>`:                         {"data: URL in href of <a>"},
		`<iframe src="https://e.com"></iframe>`:                    {"<iframe>"},
		`<p style="background:url(x)">x</p>`:                       {"style= on <p>"},
		`<code>onclick=x javascript:y</code>`:                      nil,
	} {
		require.Equal(t, want, markuptest.UnsafeHTML(s), s)
	}
}
