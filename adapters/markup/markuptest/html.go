package markuptest

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML reads an HTML fragment the way a browser shows it, for tests of
// the web chat: the visible text, with block elements (paragraphs, list
// items, headings, quotes, pre, table rows) on lines of their own, <br>
// as a line end, table cells apart by a tab, white space collapsed
// outside <pre>, and nothing of <script>, <style> or attributes. Spans:
// Bold for <strong> and <b>, Italic for <em> and <i>, Underline for <u>,
// Strike for <del>, <s> and <strike>, Code for <code> outside <pre>, Pre
// for <pre> (Language from a class="language-x" on it or its <code>), Link
// for <a href> (URL), Quote for <blockquote>, Heading for <h1> to <h6>.
// It is a test reader, not a browser: no CSS, no layout, no forms.
func HTML(s string) (Rendered, error) {
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(s), ctx)
	if err != nil {
		return Rendered{}, err
	}
	r := &htmlReader{}
	for _, n := range nodes {
		r.node(n)
	}
	r.trimSpace()
	for len(r.out) > 0 && r.out[len(r.out)-1] == '\n' {
		r.out = r.out[:len(r.out)-1]
	}
	for i := range r.spans {
		r.spans[i].End = min(r.spans[i].End, len(r.out))
	}
	var spans []Span
	for _, sp := range r.spans {
		if sp.End > sp.Start {
			spans = append(spans, sp)
		}
	}
	return Rendered{Text: string(r.out), Spans: spans}, nil
}

type htmlReader struct {
	out   []byte
	spans []Span
	pre   int // depth of <pre>
}

// htmlBlocks are the elements shown on lines of their own.
var htmlBlocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Pre: true, atom.Blockquote: true, atom.Ul: true, atom.Ol: true,
	atom.Li: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Table: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true, atom.Tr: true, atom.Hr: true,
	atom.Section: true, atom.Article: true, atom.Header: true, atom.Footer: true, atom.Dl: true, atom.Dt: true,
	atom.Dd: true, atom.Figure: true, atom.Details: true, atom.Summary: true,
}

// htmlStyles are the elements shown styled.
var htmlStyles = map[atom.Atom]Style{
	atom.Strong: Bold, atom.B: Bold, atom.Em: Italic, atom.I: Italic, atom.U: Underline,
	atom.Del: Strike, atom.S: Strike, atom.Strike: Strike, atom.Blockquote: Quote, atom.Pre: Pre,
	atom.H1: Heading, atom.H2: Heading, atom.H3: Heading, atom.H4: Heading, atom.H5: Heading, atom.H6: Heading,
}

func (r *htmlReader) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		r.text(n.Data)
		return
	case html.ElementNode:
	default:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			r.node(c)
		}
		return
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Head, atom.Title:
		return
	case atom.Br:
		r.trimSpace()
		r.out = append(r.out, '\n')
		return
	}
	block := htmlBlocks[n.DataAtom]
	if block {
		r.newLine()
	}
	if (n.DataAtom == atom.Td || n.DataAtom == atom.Th) && prevElement(n) != nil {
		r.trimSpace()
		r.out = append(r.out, '\t')
	}
	start := len(r.out)
	if n.DataAtom == atom.Pre {
		r.pre++
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.node(c)
	}
	if n.DataAtom == atom.Pre {
		r.pre--
	}
	if block {
		r.trimSpace()
	}
	end := len(r.out)
	if block && n.DataAtom != atom.Pre {
		// A block inside (a paragraph in a quote) ended its line: the
		// line end is not part of the span.
		for end > start && r.out[end-1] == '\n' {
			end--
		}
	}
	sp := Span{Start: start, End: end}
	switch st, ok := htmlStyles[n.DataAtom]; {
	case ok:
		sp.Style = st
		if st == Pre {
			sp.Language = language(n)
		}
		r.spans = append(r.spans, sp)
	case n.DataAtom == atom.Code && r.pre == 0:
		sp.Style = Code
		r.spans = append(r.spans, sp)
	case n.DataAtom == atom.A && hasAttr(n, "href"):
		sp.Style, sp.URL = Link, attr(n, "href")
		r.spans = append(r.spans, sp)
	}
	if block {
		r.newLine()
	}
}

// text writes a text node: as it is in <pre>, else with white space
// collapsed and none at the start of a line.
func (r *htmlReader) text(s string) {
	if r.pre > 0 {
		r.out = append(r.out, s...)
		return
	}
	for _, c := range []byte(s) {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			if len(r.out) > 0 && r.out[len(r.out)-1] != ' ' && r.out[len(r.out)-1] != '\n' {
				r.out = append(r.out, ' ')
			}
			continue
		}
		r.out = append(r.out, c)
	}
}

// trimSpace drops a collapsed space at the end of a line, and from the
// spans that end with it.
func (r *htmlReader) trimSpace() {
	if r.pre > 0 {
		return
	}
	for len(r.out) > 0 && r.out[len(r.out)-1] == ' ' {
		r.out = r.out[:len(r.out)-1]
	}
	for i := range r.spans {
		r.spans[i].End = min(r.spans[i].End, len(r.out))
	}
}

// newLine starts a line unless one is started.
func (r *htmlReader) newLine() {
	r.trimSpace()
	if len(r.out) > 0 && r.out[len(r.out)-1] != '\n' {
		r.out = append(r.out, '\n')
	}
}

// language is the "x" of a class="language-x" on a <pre> or its <code>.
func language(n *html.Node) string {
	for _, m := range []*html.Node{n, n.FirstChild} {
		if m == nil || m.Type != html.ElementNode {
			continue
		}
		for _, c := range strings.Fields(attr(m, "class")) {
			if l, ok := strings.CutPrefix(c, "language-"); ok {
				return l
			}
		}
	}
	return ""
}

// prevElement is the element before n among its siblings, nil if none.
func prevElement(n *html.Node) *html.Node {
	for p := n.PrevSibling; p != nil; p = p.PrevSibling {
		if p.Type == html.ElementNode {
			return p
		}
	}
	return nil
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// htmlURLAttrs are the attributes that hold a URL a browser may follow
// or load.
var htmlURLAttrs = map[string]bool{
	"href": true, "src": true, "action": true, "formaction": true, "xlink:href": true, "data": true,
	"poster": true, "background": true, "srcset": true, "cite": true, "ping": true, "manifest": true,
}

// htmlDangerous are elements that run script or load or embed something.
var htmlDangerous = map[string]bool{
	"script": true, "style": true, "iframe": true, "frame": true, "frameset": true, "object": true,
	"embed": true, "applet": true, "base": true, "meta": true, "link": true, "form": true, "svg": true,
	"math": true,
}

// htmlLoaders are elements that load what their src names.
var htmlLoaders = map[string]bool{
	"img": true, "video": true, "audio": true, "source": true, "track": true, "input": true, "image": true,
}

// UnsafeHTML lists what in the HTML s could run script or load anything
// when a browser shows it, one description each: elements such as
// <script>, <iframe> or <style>, on* event attributes, style attributes,
// javascript:, vbscript: and data: URLs, and images (or media) loaded
// from a URL. Nil means none. It reads s with an HTML tokenizer, as a
// browser would, so that text that only looks like HTML is not reported.
func UnsafeHTML(s string) []string {
	var found []string
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return found
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		t := z.Token()
		name := strings.ToLower(t.Data)
		if htmlDangerous[name] {
			found = append(found, "<"+name+">")
		}
		for _, a := range t.Attr {
			key := strings.ToLower(a.Key)
			switch {
			case strings.HasPrefix(key, "on"):
				found = append(found, fmt.Sprintf("%s= on <%s>", key, name))
			case key == "style":
				found = append(found, fmt.Sprintf("style= on <%s>", name))
			case htmlURLAttrs[key]:
				u := urlScheme(a.Val)
				switch {
				case u == "javascript" || u == "vbscript" || u == "data":
					found = append(found, fmt.Sprintf("%s: URL in %s of <%s>", u, key, name))
				case htmlLoaders[name] && (key == "src" || key == "srcset" || key == "poster") && strings.TrimSpace(a.Val) != "":
					found = append(found, fmt.Sprintf("<%s> loads %s", name, a.Val))
				}
			}
		}
	}
}

// urlScheme is the scheme of u as a browser finds it (lower case, with
// the white space and control characters it ignores taken out), "" if
// none.
func urlScheme(u string) string {
	u = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, u)
	scheme, _, ok := strings.Cut(u, ":")
	if !ok || strings.ContainsAny(scheme, "/?#") {
		return ""
	}
	return strings.ToLower(scheme)
}
