package markup

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// TelegramV2 renders md as Telegram MarkdownV2, to send with parse_mode
// MarkdownV2. Every character Telegram reserves is escaped where it is
// meant literally, so the result always parses.
func TelegramV2(md string) string { return render(md, telegram) }

// Discord renders md as Discord markdown: **bold**, *italic*, ~~strike~~,
// code, fenced code, [text](url) links (Discord shows them in bot
// messages), "- " lists and "> " quotes. Discord's markdown characters in
// plain text are escaped with a backslash; bare URLs are left alone so
// they stay links.
func Discord(md string) string { return render(md, discord) }

// Slack renders md as Slack mrkdwn: *bold*, _italic_, ~strike~, `code`,
// ```pre```, <url|text> links, "• " lists and "> " quotes. &, < and > are
// escaped as Slack requires. mrkdwn has no escape for its other markers;
// Slack only reads them at word boundaries, so a literal "2*3*4" or
// "snake_case" shows as written.
func Slack(md string) string { return render(md, slack) }

// Plain returns the text of md with the Markdown taken out: emphasis
// markers dropped, a link as "text (url)", list items as "• " and "1. "
// lines, code kept verbatim without its fences, quotes as "> " lines.
func Plain(md string) string { return render(md, plain) }

// EscapeDiscord escapes s so that Discord shows it as written rather than
// as markdown (bare URLs are left as they are, so they stay links).
func EscapeDiscord(s string) string { return escapeDiscord(normalize(s), true) }

// flavor is the markup being written.
type flavor int

const (
	telegram flavor = iota
	discord
	slack
	plain
)

// mdParser parses CommonMark with GFM strikethrough. A goldmark parser is
// safe for concurrent use and holds no per-document state.
var mdParser = goldmark.New(goldmark.WithExtensions(extension.Strikethrough)).Parser()

// normalize makes md something every platform accepts: valid UTF-8, "\n"
// line ends, no NUL.
func normalize(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = strings.ReplaceAll(md, "\r", "\n")
	return strings.ReplaceAll(md, "\x00", "\uFFFD")
}

func render(md string, f flavor) string {
	r, lines := renderLines(md, f, false)
	if r == nil {
		return ""
	}
	return r.assemble(lines)
}

// renderLines renders md as lines, without the blank lines at the end;
// split has them annotated for splitting. The renderer is nil when md is
// blank.
func renderLines(md string, f flavor, split bool) (*renderer, []line) {
	md = normalize(md)
	if strings.TrimSpace(md) == "" {
		return nil, nil
	}
	r := &renderer{src: []byte(md), f: f, split: split}
	doc := mdParser.Parse(text.NewReader(r.src))
	lines := r.blocks(doc, false, true)
	for len(lines) > 0 && lines[len(lines)-1].text == "" && !lines[len(lines)-1].quote {
		lines = lines[:len(lines)-1]
	}
	return r, lines
}

// renderer renders one document. Blocks become lines, so that quote
// markers can be put at the very start of a line (Telegram reads '>'
// nowhere else) whatever lists they are nested in.
type renderer struct {
	src []byte
	f   flavor
	// split has lines annotated with where they may be cut; whole-text
	// rendering skips that work.
	split bool
}

// line is one output line; quote marks it as part of a block quote. The
// other fields say where the text may be cut into parts (split.go); they
// are only set when the renderer splits.
type line struct {
	quote bool
	text  string
	// open: a span or link goes on past the end of this line, so the text
	// may not be cut after it.
	open bool
	// start: the line starts a block (paragraph, list item, heading, code
	// block...), the best place for a cut.
	start bool
	// code is the line's place in a code block.
	code codePos
	// fence and unfence are, on the lines of a fenced code block, the
	// lines that open it again at the start of a part and close it at the
	// end of one (indented as a continuation line, without list marker).
	fence, unfence string
	// cuts are the places between words where the line may be cut.
	cuts []cut
}

func (r *renderer) assemble(lines []line) string {
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if l.quote {
			p := r.quotePrefix()
			if l.text == "" {
				p = strings.TrimRight(p, " ")
			}
			b.WriteString(p)
		}
		b.WriteString(l.text)
	}
	return b.String()
}

func (r *renderer) quotePrefix() string {
	if r.f == telegram {
		return ">"
	}
	return "> "
}

// blocks renders the block children of parent; spaced puts a blank line
// between them (paragraphs), as opposed to the compact lines of a list
// item.
func (r *renderer) blocks(parent ast.Node, quoted, spaced bool) []line {
	var out []line
	for n := parent.FirstChild(); n != nil; n = n.NextSibling() {
		ls := r.block(n, quoted)
		if len(ls) == 0 {
			continue
		}
		if len(out) > 0 && spaced {
			out = append(out, line{quote: quoted})
		}
		ls[0].start = true
		out = append(out, ls...)
	}
	return out
}

func (r *renderer) block(n ast.Node, quoted bool) []line {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		return r.inlineBlock(n, false)
	case *ast.Heading:
		return r.inlineBlock(n, true)
	case *ast.ThematicBreak:
		return []line{{text: "———"}}
	case *ast.FencedCodeBlock:
		return r.codeBlock(language(n.Language(r.src)), r.rawLines(n), quoted)
	case *ast.CodeBlock:
		return r.codeBlock("", r.rawLines(n), quoted)
	case *ast.Blockquote:
		ls := r.blocks(n, true, true)
		for i := range ls {
			ls[i].quote = true
		}
		return ls
	case *ast.List:
		return r.list(n, quoted)
	case *ast.HTMLBlock:
		raw := r.rawLines(n)
		if n.HasClosure() {
			raw += string(n.ClosureLine.Value(r.src))
		}
		return r.textLines(strings.TrimRight(raw, "\n"))
	default:
		if c := n.FirstChild(); c != nil && c.Type() == ast.TypeInline {
			return r.inlineBlock(n, false)
		}
		return r.blocks(n, quoted, true)
	}
}

// rawLines is the source text of a block, line ends included.
func (r *renderer) rawLines(n ast.Node) string {
	var b strings.Builder
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		b.WriteString(strings.Repeat(" ", seg.Padding))
		b.Write(seg.Value(r.src))
	}
	return b.String()
}

// textLines shows s as text, escaped, one line per line.
func (r *renderer) textLines(s string) []line {
	if s == "" {
		return nil
	}
	var out []line
	for _, l := range strings.Split(s, "\n") {
		out = append(out, line{text: r.escape(l, true)})
	}
	return out
}

// inlineBlock renders a block of inline content; a heading is one bold line.
func (r *renderer) inlineBlock(n ast.Node, heading bool) []line {
	w := &inline{r: r}
	if heading {
		w.styled(bold, n)
	} else {
		w.children(n)
	}
	s := strings.TrimRight(string(w.buf), "\n")
	if s == "" {
		return nil
	}
	if !r.split {
		parts := strings.Split(s, "\n")
		out := make([]line, len(parts))
		for i, p := range parts {
			out[i] = line{text: p}
		}
		return out
	}
	return r.annotated(s, w.breaks, w.cuts)
}

func (r *renderer) list(l *ast.List, quoted bool) []line {
	var out []line
	num := l.Start
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		marker, width := "• ", 2
		switch {
		case l.IsOrdered():
			digits := strconv.Itoa(num)
			num++
			marker, width = digits+". ", len(digits)+2
			if r.f == telegram {
				marker = digits + `\. `
			}
		case r.f == discord:
			marker = "- "
		}
		ls := r.blocks(item, quoted, false)
		if len(ls) == 0 {
			ls = []line{{quote: quoted}}
		}
		indent := strings.Repeat(" ", width)
		for j := range ls {
			l := &ls[j]
			var shift int
			switch {
			case j == 0:
				l.text = marker + l.text
				shift = len(marker)
			case l.text != "":
				l.text = indent + l.text
				shift = len(indent)
			}
			for k := range l.cuts {
				l.cuts[k].end += shift
				l.cuts[k].next += shift
			}
			if l.fence != "" {
				l.fence, l.unfence = indent+l.fence, indent+l.unfence
			}
		}
		ls[0].start = true
		out = append(out, ls...)
	}
	return out
}

func (r *renderer) codeBlock(lang, code string, quoted bool) []line {
	code = strings.TrimRight(code, "\n")
	if strings.TrimSpace(code) == "" {
		return nil
	}
	var s string
	switch r.f {
	case telegram, slack:
		if quoted {
			// Telegram would take the quote markers of the lines as code,
			// and Slack reads quotes line by line: each line becomes inline
			// code instead.
			var out []line
			for _, l := range strings.Split(code, "\n") {
				if strings.TrimSpace(l) != "" {
					l = r.codeSpan(l)
				}
				out = append(out, line{text: l})
			}
			return out
		}
		if r.f == slack {
			s = "```\n" + escapeSlack(breakRuns(code, "```")) + "\n```"
			break
		}
		s = "```" + lang + "\n" + escapeTelegramCode(code) + "\n```"
	case discord:
		s = "```" + lang + "\n" + breakRuns(code, "```") + "\n```"
	default:
		s = code
	}
	var out []line
	for _, l := range strings.Split(s, "\n") {
		out = append(out, line{text: l, code: codeBody})
	}
	if r.f != plain && len(out) >= 3 {
		// The fences are the first and last lines.
		fence, unfence := out[0].text, out[len(out)-1].text
		for i := range out {
			out[i].fence, out[i].unfence = fence, unfence
		}
		out[0].code, out[len(out)-1].code = codeOpen, codeClose
	}
	return out
}

// escape escapes text in running text; lineStart says s starts a line.
func (r *renderer) escape(s string, lineStart bool) string {
	switch r.f {
	case telegram:
		return escapeTelegram(s)
	case discord:
		return escapeDiscord(s, lineStart)
	case slack:
		return escapeSlack(s)
	}
	return s
}

// style is an inline style with open and close markers.
type style int

const (
	bold style = iota
	italic
	strike
	nStyles
)

func (r *renderer) markers(st style) string {
	switch r.f {
	case telegram:
		return [...]string{"*", "_", "~"}[st]
	case discord:
		return [...]string{"**", "*", "~~"}[st]
	case slack:
		return [...]string{"*", "_", "~"}[st]
	}
	return ""
}

// inline renders inline content into buf.
type inline struct {
	r   *renderer
	buf []byte
	// active marks the styles open around the current node: a style
	// nested in itself is not opened again (Telegram would read "__" as
	// underline, "**" as an empty bold).
	active [nStyles]bool
	// closedAt is len(buf) just after a style's last close marker: a span
	// of the same style starting right there continues it instead.
	closedAt [nStyles]int
	// openedAt is len(buf) just after a style's last open marker.
	openedAt [nStyles]int
	// join is set after a Slack marker closed: Slack only reads markers at
	// word boundaries, so a word character right after needs a separator.
	join   bool
	inLink bool
	// depth counts the spans and links open around the current node.
	depth int
	// breaks and cuts are, when splitting, the line ends and the spaces
	// written outside every span: places where the text may be cut.
	breaks []int
	cuts   []cut
}

// zwsp separates a Slack marker from an adjacent word character.
const zwsp = "\u200b"

func (w *inline) children(n ast.Node) {
	for c := n.FirstChild(); c != nil; {
		t, ok := c.(*ast.Text)
		if !ok {
			w.node(c)
			c = c.NextSibling()
			continue
		}
		// goldmark cuts text at every possible delimiter; a run is escaped
		// as one, so that a bare URL in it is seen whole.
		var run strings.Builder
		for {
			run.WriteString(w.textValue(t))
			c = c.NextSibling()
			if t.HardLineBreak() || t.SoftLineBreak() {
				w.text(run.String())
				w.newline()
				break
			}
			if t, ok = c.(*ast.Text); !ok {
				w.text(run.String())
				break
			}
		}
	}
}

func (w *inline) textValue(t *ast.Text) string {
	v := t.Segment.Value(w.r.src)
	if t.IsRaw() {
		return string(v)
	}
	return decode(v)
}

func (w *inline) node(n ast.Node) {
	src := w.r.src
	switch n := n.(type) {
	case *ast.Text:
		w.text(w.textValue(n))
		if n.HardLineBreak() || n.SoftLineBreak() {
			w.newline()
		}
	case *ast.String:
		if n.IsCode() || n.IsRaw() {
			w.text(string(n.Value))
		} else {
			w.text(decode(n.Value))
		}
	case *ast.CodeSpan:
		w.code(codeSpanText(n, src))
	case *ast.Emphasis:
		if n.Level >= 2 {
			w.styled(bold, n)
		} else {
			w.styled(italic, n)
		}
	case *east.Strikethrough:
		w.styled(strike, n)
	case *ast.Link:
		w.link(n, decode(n.Destination))
	case *ast.Image:
		w.link(n, decode(n.Destination))
	case *ast.AutoLink:
		w.autoLink(n)
	case *ast.RawHTML:
		var b []byte
		for i := range n.Segments.Len() {
			seg := n.Segments.At(i)
			b = append(b, seg.Value(src)...)
		}
		w.text(string(b))
	default:
		w.children(n)
	}
}

// raw writes markup as it is.
func (w *inline) raw(s string) {
	w.join = false
	w.buf = append(w.buf, s...)
}

// newline writes a line break.
func (w *inline) newline() {
	if w.r.split && w.depth == 0 {
		w.breaks = append(w.breaks, len(w.buf))
	}
	w.raw("\n")
}

// text writes s escaped.
func (w *inline) text(s string) {
	if s == "" {
		return
	}
	if w.join {
		w.join = false
		if r, _ := utf8.DecodeRuneInString(s); isWordRune(r) {
			w.buf = append(w.buf, zwsp...)
		}
	}
	lineStart := len(w.buf) == 0 || w.buf[len(w.buf)-1] == '\n'
	start := len(w.buf)
	w.buf = append(w.buf, w.r.escape(s, lineStart)...)
	if w.r.split && w.depth == 0 {
		w.mark(start)
	}
}

// mark records the spaces and line ends written from start on as places
// to cut: text outside every span, where a cut cuts no markup.
func (w *inline) mark(start int) {
	b := w.buf
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '\n':
			w.breaks = append(w.breaks, i)
		case ' ':
			j := i + 1
			for j < len(b) && b[j] == ' ' {
				j++
			}
			w.cuts = append(w.cuts, cut{end: i, next: j})
			i = j - 1
		}
	}
}

// separateBold keeps, on Discord, an italic span's opening star apart
// from a bold span's starting its text ("*" "**a** b*"), which Discord
// would read as bold first; "***a***", both ending together, reads well.
func (w *inline) separateBold(st style, content int) {
	if w.r.f != discord || st != italic || w.openedAt[bold] != content+2 ||
		w.closedAt[bold] == len(w.buf) || !strings.HasPrefix(string(w.buf[content:]), "**") {
		return
	}
	w.buf = append(w.buf[:content], append([]byte(zwsp), w.buf[content:]...)...)
}

// closesHere reports whether a span's closing marker ends buf.
func (w *inline) closesHere() bool {
	for _, at := range w.closedAt {
		if at == len(w.buf) && at > 0 {
			return true
		}
	}
	return false
}

// open writes an opening Slack-style marker, kept off a preceding word.
func (w *inline) open(m string) {
	if w.r.f == slack {
		if r, _ := utf8.DecodeLastRune(w.buf); isWordRune(r) {
			w.buf = append(w.buf, zwsp...)
		}
	}
	w.raw(m)
}

// closeMarker writes a closing marker.
func (w *inline) closeMarker(m string) {
	w.raw(m)
	w.join = w.r.f == slack
}

func (w *inline) styled(st style, n ast.Node) {
	m := w.r.markers(st)
	if m == "" || w.active[st] {
		w.children(n)
		return
	}
	start := len(w.buf)
	merged := w.closedAt[st] == len(w.buf) && len(w.buf) >= len(m)
	if merged {
		// "_a_" then "_b_" would be "_a__b_": Telegram reads "__" as
		// underline. One span "_ab_" looks the same everywhere.
		w.buf = w.buf[:len(w.buf)-len(m)]
		w.join = false
	} else {
		if w.r.f == discord && m[0] == '*' && w.closesHere() {
			// "**a**" then "*b*" would be "**a***b*", which Discord reads
			// as bold "a*" and a stray star: keep the markers apart.
			w.buf = append(w.buf, zwsp...)
		}
		w.open(m)
	}
	content := len(w.buf)
	w.openedAt[st] = content
	w.active[st] = true
	w.depth++
	w.children(n)
	w.depth--
	w.active[st] = false
	switch {
	case len(w.buf) > content:
		w.separateBold(st, content)
		w.closeMarker(m)
		w.closedAt[st] = len(w.buf)
	case merged:
		w.closeMarker(m) // nothing added: put back the close taken off
		w.closedAt[st] = len(w.buf)
	default:
		w.buf = w.buf[:start] // an empty span shows nothing
	}
}

func (w *inline) code(s string) {
	if s == "" {
		return
	}
	if w.r.f == slack {
		w.open("")
		w.raw(w.r.codeSpan(s))
		w.closeMarker("")
		return
	}
	w.raw(w.r.codeSpan(s))
}

// codeSpan is s (not empty) as inline code.
func (r *renderer) codeSpan(s string) string {
	switch r.f {
	case telegram:
		return "`" + escapeTelegramCode(s) + "`"
	case discord:
		if !strings.Contains(s, "`") {
			return "`" + s + "`"
		}
		// Double backticks take a single one inside; a space keeps a
		// backtick at either end off the fence (Discord drops that space).
		pre, post := "", ""
		if s[0] == '`' {
			pre = " "
		}
		if s[len(s)-1] == '`' {
			post = " "
		}
		return "``" + pre + breakRuns(s, "``") + post + "``"
	case slack:
		// Slack has no escape inside `code`; ``` takes backticks.
		if strings.Contains(s, "`") {
			// A zero-width space keeps a backtick at either end off the
			// fence.
			pre, post := "", ""
			if s[0] == '`' {
				pre = zwsp
			}
			if s[len(s)-1] == '`' {
				post = zwsp
			}
			return "```" + pre + escapeSlack(breakRuns(s, "```")) + post + "```"
		}
		return "`" + escapeSlack(s) + "`"
	}
	return s
}

// link renders a link or an image (as a link to the image).
func (w *inline) link(n ast.Node, dest string) {
	if w.inLink || dest == "" {
		w.children(n)
		return
	}
	if !linkable(w.r.f, dest) {
		// A link the platform cannot make (a relative URL): its text, and
		// the URL so nothing is lost.
		w.withURL(n, dest)
		return
	}
	w.inLink = true
	w.depth++
	defer func() { w.inLink = false; w.depth-- }()
	switch w.r.f {
	case telegram, discord:
		start := len(w.buf)
		w.raw("[")
		w.children(n)
		if len(w.buf) == start+1 {
			w.text(dest) // nothing to click on: show the URL
		}
		if w.r.f == telegram {
			w.raw("](" + escapeTelegramURL(dest) + ")")
		} else {
			w.raw("](" + encodeURL(dest, "()<> \\") + ")")
		}
	case slack:
		label := plainText(w.r.src, n)
		u := escapeSlack(encodeURL(dest, "|<> "))
		if label == "" || label == dest {
			w.raw("<" + u + ">")
		} else {
			w.raw("<" + u + "|" + escapeSlack(label) + ">")
		}
	default:
		w.withURL(n, dest)
	}
}

// withURL writes a link as its text followed by "(url)", or as the URL
// when it has no text.
func (w *inline) withURL(n ast.Node, dest string) {
	label := plainText(w.r.src, n)
	w.children(n)
	switch {
	case label == "":
		w.text(dest)
	case label != dest:
		w.text(" (" + dest + ")")
	}
}

func (w *inline) autoLink(n *ast.AutoLink) {
	label := string(n.Label(w.r.src))
	u := string(n.URL(w.r.src))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
		u = "mailto:" + u
	}
	if w.r.f != slack || w.inLink {
		// Telegram and Discord make links of URLs and addresses in text.
		w.text(label)
		return
	}
	u = escapeSlack(encodeURL(u, "|<> "))
	if label == string(n.URL(w.r.src)) && n.AutoLinkType == ast.AutoLinkURL {
		w.raw("<" + u + ">")
		return
	}
	w.raw("<" + u + "|" + escapeSlack(label) + ">")
}

// plainText is the text of n's inline children, without markup.
func plainText(src []byte, n ast.Node) string {
	w := &inline{r: &renderer{src: src, f: plain}}
	w.children(n)
	return string(w.buf)
}

// linkable reports whether f can show a link to dest.
func linkable(f flavor, dest string) bool {
	scheme, _, ok := strings.Cut(dest, ":")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		return true
	case "tg":
		return f == telegram
	case "mailto":
		return f == slack
	}
	return f == plain
}

// codeSpanText is the text of a code span; a line end in it is a space.
func codeSpanText(n *ast.CodeSpan, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		}
	}
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// language is a code block's language if it is a plain name; anything else
// could break the fence line.
func language(b []byte) string {
	if len(b) == 0 || len(b) > 32 {
		return ""
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+#.-", c) >= 0) {
			return ""
		}
	}
	return string(b)
}

// decode resolves backslash escapes and entity references in Markdown
// text, the way CommonMark shows them.
func decode(v []byte) string {
	if !strings.ContainsAny(string(v), "\\&") {
		return string(v)
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]):
			i++
			b.WriteByte(v[i])
		case c == '&':
			if r, n := entity(v[i:]); n > 0 {
				b.WriteString(r)
				i += n - 1
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// entity reads an entity reference at the start of v ("&amp;", "&#35;",
// "&#x23;") and returns its characters and length, or 0 if there is none.
func entity(v []byte) (string, int) {
	end := strings.IndexByte(string(v), ';')
	if end < 2 || end > 40 {
		return "", 0
	}
	name := string(v[1:end])
	if num, ok := strings.CutPrefix(name, "#"); ok {
		base := 10
		if len(num) > 0 && (num[0] == 'x' || num[0] == 'X') {
			base, num = 16, num[1:]
		}
		if num == "" || len(num) > 7 {
			return "", 0
		}
		cp, err := strconv.ParseUint(num, base, 32)
		if err != nil {
			return "", 0
		}
		r := rune(cp)
		if r == 0 || !utf8.ValidRune(r) {
			r = unicode.ReplacementChar
		}
		return string(r), end + 1
	}
	for _, c := range []byte(name) {
		if !util.IsAlphaNumeric(c) {
			return "", 0
		}
	}
	e, ok := util.LookUpHTML5EntityByName(name)
	if !ok {
		return "", 0
	}
	return string(e.Characters), end + 1
}

// isWordRune reports whether r is a letter or digit.
func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// breakRuns puts a zero-width space into every run of fence (a run of
// backticks) in s, so code cannot end its own fence.
func breakRuns(s, fence string) string {
	for strings.Contains(s, fence) {
		s = strings.ReplaceAll(s, fence, fence[:len(fence)-1]+zwsp+fence[len(fence)-1:])
	}
	return s
}

// encodeURL percent-encodes the characters of set in u.
func encodeURL(u, set string) string {
	if !strings.ContainsAny(u, set) {
		return u
	}
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		if c := u[i]; strings.IndexByte(set, c) >= 0 {
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c), 16)))
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
