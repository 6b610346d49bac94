package markup_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
)

func readHTML(t *testing.T, md string) markuptest.Rendered {
	t.Helper()
	out := markup.HTML(md)
	require.Empty(t, markuptest.UnsafeHTML(out), "unsafe HTML from %q: %s", md, out)
	r, err := markuptest.HTML(out)
	require.NoError(t, err)
	return r
}

func TestHTMLElements(t *testing.T) {
	t.Parallel()
	r := readHTML(t, "# Title\n\n**bold** *italic* ~~gone~~ `x < y` [link](https://e.com/a?b=1&c=2)\n"+
		"second line\n\n- one\n- two\n\n> quoted\n\n```go\nif a < b {\n}\n```\n\n| a | b |\n|---|:-:|\n| 1 | 2 |")
	require.Equal(t, "Title\nbold italic gone x < y link\nsecond line\none\ntwo\nquoted\nif a < b {\n}\na\tb\n1\t2", r.Text)
	require.Equal(t, []string{"Title"}, r.Styled(markuptest.Heading))
	require.Equal(t, []string{"bold"}, r.Styled(markuptest.Bold))
	require.Equal(t, []string{"italic"}, r.Styled(markuptest.Italic))
	require.Equal(t, []string{"gone"}, r.Styled(markuptest.Strike))
	require.Equal(t, []string{"x < y"}, r.Styled(markuptest.Code))
	require.Equal(t, "https://e.com/a?b=1&c=2", r.LinkTo("link"))
	require.Equal(t, []string{"quoted"}, r.Styled(markuptest.Quote))
	pre := spansOf(r, markuptest.Pre)
	require.Len(t, pre, 1)
	require.Equal(t, "go", pre[0].Language)
	require.Equal(t, "if a < b {\n}\n", r.Text[pre[0].Start:pre[0].End])

	out := markup.HTML("- one\n- two\n\n3. three\n\n| a | b |\n|---|:-:|\n| 1 | 2 |\n\n- [x] done")
	for _, want := range []string{"<ul>", "<li>one</li>", `<ol start="3">`, "<table>", "<th>a</th>", `<th align="center">b</th>`,
		`<input checked="" disabled="" type="checkbox"`} {
		require.Contains(t, out, want)
	}
}

func TestHTMLLinks(t *testing.T) {
	t.Parallel()
	out := markup.HTML("[a](https://e.com/x) <https://e.com/y> www.example.com me@e.com [m](mailto:me@e.com)")
	require.Equal(t, 5, strings.Count(out, `rel="nofollow noopener noreferrer" target="_blank"`), out)
	r := readHTML(t, "[a](https://e.com/x) <https://e.com/y> www.example.com me@e.com [m](mailto:me@e.com)")
	require.Equal(t, "https://e.com/x", r.LinkTo("a"))
	require.Equal(t, "https://e.com/y", r.LinkTo("https://e.com/y"))
	require.Equal(t, "http://www.example.com", r.LinkTo("www.example.com"))
	require.Equal(t, "mailto:me@e.com", r.LinkTo("me@e.com"))
	require.Equal(t, "mailto:me@e.com", r.LinkTo("m"))

	// Images are not loaded: they are links to the image.
	r = readHTML(t, "![a cat](https://e.com/cat.png) ![](https://e.com/dog.png)")
	require.Equal(t, "https://e.com/cat.png", r.LinkTo("a cat"))
	require.Equal(t, "https://e.com/dog.png", r.LinkTo("https://e.com/dog.png"))
	require.NotContains(t, markup.HTML("![a cat](https://e.com/cat.png)"), "<img")
}

func TestHTMLLineBreaks(t *testing.T) {
	t.Parallel()
	require.Equal(t, "<p>one<br>\ntwo</p>\n", markup.HTML("one\ntwo"))
	require.Equal(t, "<p>one</p>\n<p>two</p>\n", markup.HTML("one\r\n\r\ntwo"))
	require.Empty(t, markup.HTML(" \n "))
}

func TestHTMLRunsNothing(t *testing.T) {
	t.Parallel()
	for md, shown := range map[string]string{
		"<script>alert(1)</script>":                      "<script>alert(1)</script>",
		"hi <img src=x onerror=alert(1)> there":          "hi <img src=x onerror=alert(1)> there",
		"<div onclick=\"x()\">\n*a*\n</div>":             "<div onclick=\"x()\">\n*a*\n</div>",
		"[x](javascript:alert(1))":                       "x",
		"[x](JaVaScRiPt:alert(1))":                       "x",
		"[x](data:text/html,<script>alert(1)</script>)":  "x",
		"[x](vbscript:msgbox)":                           "x",
		"[x](/relative)":                                 "x",
		"![y](javascript:alert(1))":                      "y",
		"<javascript:alert(1)>":                          "javascript:alert(1)", // an autolink, not followed
		"<a href=\"javascript:alert(1)\">z</a>":          "<a href=\"javascript:alert(1)\">z</a>",
		"`<script>` and <style>body{}</style>":           "<script> and <style>body{}</style>",
		"<iframe src=\"https://evil.example\"></iframe>": "<iframe src=\"https://evil.example\"></iframe>",
	} {
		out := markup.HTML(md)
		require.Empty(t, markuptest.UnsafeHTML(out), "%q gave %s", md, out)
		r, err := markuptest.HTML(out)
		require.NoError(t, err)
		require.Equal(t, shown, r.Text, "%q gave %s", md, out)
		require.Empty(t, r.Styled(markuptest.Link), "%q gave %s", md, out)
	}
}

func TestHTMLConcurrent(t *testing.T) {
	t.Parallel()
	want := markup.HTML(reply)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := markup.HTML(reply); got != want {
					t.Errorf("HTML differs under concurrency: %s", got)
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkHTML(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		markup.HTML(reply)
	}
}
