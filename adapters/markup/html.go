package markup

import (
	"bytes"
	"html"
	"net/url"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	grenderer "github.com/yuin/goldmark/renderer"
	ghtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// HTML renders md as sanitised HTML for a browser (the web chat and
// console): CommonMark with GFM (strikethrough, tables, bare URLs as
// links, task lists), a line break where the text has one, code blocks as
// <pre><code class="language-x">. HTML the model writes is shown as text,
// never run; links go to http, https and mailto URLs only, open in a new
// tab, with rel="nofollow noopener noreferrer"; images are links to them,
// not loaded. The result then goes through a sanitiser that allows only
// the elements and attributes written here, so that a bug in the
// rendering cannot let anything else through.
func HTML(md string) string {
	md = normalize(md)
	if strings.TrimSpace(md) == "" {
		return ""
	}
	var b bytes.Buffer
	b.Grow(len(md) + len(md)/2)
	if err := htmlMarkdown.Convert([]byte(md), &b); err != nil {
		// Writing to a bytes.Buffer does not fail; show the text rather
		// than nothing if it ever did.
		return "<p>" + html.EscapeString(md) + "</p>"
	}
	return string(htmlPolicy.SanitizeBytes(b.Bytes()))
}

// htmlMarkdown and htmlPolicy are built once: both are safe for
// concurrent use and never changed after.
var (
	htmlMarkdown = goldmark.New(
		goldmark.WithExtensions(
			extension.Linkify,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
			extension.Strikethrough,
			extension.TaskList,
		),
		goldmark.WithRendererOptions(
			ghtml.WithHardWraps(),
			grenderer.WithNodeRenderers(util.Prioritized(safeHTML{}, 100)),
		),
	)
	htmlPolicy = newHTMLPolicy()
)

// newHTMLPolicy allows what HTML writes and nothing more.
func newHTMLPolicy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "strong", "b", "em", "i", "del", "s", "code", "pre", "blockquote",
		"ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("rel").Matching(regexp.MustCompile(`^nofollow noopener noreferrer$`)).OnElements("a")
	p.AllowAttrs("target").Matching(regexp.MustCompile(`^_blank$`)).OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(false)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w+#.-]+$`)).OnElements("code")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|center|right)$`)).OnElements("th", "td")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^$`)).OnElements("input")
	return p
}

// safeHTML renders the nodes goldmark's own renderer would write unsafely
// or drop: raw HTML as text, links only to web and mail URLs and with
// their rel and target, images as links.
type safeHTML struct{}

// RegisterFuncs implements goldmark renderer.NodeRenderer.
func (safeHTML) RegisterFuncs(reg grenderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindLink, renderLink)
	reg.Register(ast.KindImage, renderImage)
	reg.Register(ast.KindAutoLink, renderAutoLink)
	reg.Register(ast.KindRawHTML, renderRawHTML)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlock)
}

// webURL is dest if a browser may follow it from a chat (http, https,
// mailto), else "".
func webURL(dest []byte) string {
	u := string(util.URLEscape(dest, true))
	scheme, _, ok := strings.Cut(u, ":")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "mailto":
	default:
		return ""
	}
	if _, err := url.Parse(u); err != nil {
		return ""
	}
	return u
}

func openLink(w util.BufWriter, u string) {
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.Write(util.EscapeHTML([]byte(u)))
	_, _ = w.WriteString(`" rel="nofollow noopener noreferrer" target="_blank">`)
}

// renderLink writes a link, or only its text if it goes nowhere a chat
// should send anyone (javascript:, data:, relative).
func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	u := webURL(node.(*ast.Link).Destination)
	switch {
	case u == "":
	case entering:
		openLink(w, u)
	default:
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

// renderImage writes an image as a link to it, with its alt text (or its
// URL) to click on: the page loads no images from elsewhere.
func renderImage(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	u := webURL(node.(*ast.Image).Destination)
	switch {
	case u == "":
	case entering:
		openLink(w, u)
		if node.FirstChild() == nil {
			_, _ = w.Write(util.EscapeHTML([]byte(u)))
		}
	default:
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	dest := n.URL(src)
	if n.AutoLinkType == ast.AutoLinkEmail && !bytes.HasPrefix(bytes.ToLower(dest), []byte("mailto:")) {
		dest = append([]byte("mailto:"), dest...)
	}
	u := webURL(dest)
	if u != "" {
		openLink(w, u)
	}
	_, _ = w.Write(util.EscapeHTML(n.Label(src)))
	if u != "" {
		_, _ = w.WriteString("</a>")
	}
	return ast.WalkContinue, nil
}

// renderRawHTML shows inline HTML as the text it is.
func renderRawHTML(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	for i := range n.Segments.Len() {
		seg := n.Segments.At(i)
		_, _ = w.Write(util.EscapeHTML(seg.Value(src)))
	}
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock shows a block of HTML as a paragraph of its text.
func renderHTMLBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	var raw []byte
	for i := range n.Lines().Len() {
		seg := n.Lines().At(i)
		raw = append(raw, seg.Value(src)...)
	}
	if n.HasClosure() {
		raw = append(raw, n.ClosureLine.Value(src)...)
	}
	raw = bytes.TrimRight(raw, "\n")
	if len(bytes.TrimSpace(raw)) == 0 {
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString("<p>")
	for i, l := range bytes.Split(raw, []byte("\n")) {
		if i > 0 {
			_, _ = w.WriteString("<br>\n")
		}
		_, _ = w.Write(util.EscapeHTML(l))
	}
	_, _ = w.WriteString("</p>\n")
	return ast.WalkContinue, nil
}
