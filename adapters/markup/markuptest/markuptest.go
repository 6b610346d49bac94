// Package markuptest reads platform markup back the way each platform
// shows it, for tests and fake platforms: the text a user sees and which
// parts of it are styled. TelegramV2 also refuses what Telegram refuses,
// with Telegram's message; Discord and Slack never refuse markup, they
// show what they cannot read as text. HTML reads the web chat's HTML as a
// browser shows it, and UnsafeHTML lists what in HTML could run script or
// load anything.
//
// The readers follow the platforms' documented rules closely enough to
// check what adapters/markup writes and what a bot would commonly send; they
// are not complete parsers of every platform quirk.
package markuptest

import "strings"

// Style is how a span of text is shown.
type Style string

// Styles.
const (
	Bold      Style = "bold"
	Italic    Style = "italic"
	Underline Style = "underline"
	Strike    Style = "strikethrough"
	Spoiler   Style = "spoiler"
	Code      Style = "code"
	Pre       Style = "pre"
	Link      Style = "link"
	Quote     Style = "quote"
	// Heading is Discord's "# " line (shown big and bold).
	Heading Style = "heading"
)

// Span is a styled stretch of Rendered.Text.
type Span struct {
	Style Style
	// Start and End are byte offsets into Rendered.Text.
	Start, End int
	// URL is a link's target.
	URL string
	// Language is a pre block's language, "" if none.
	Language string
}

// Rendered is what a user sees of a message.
type Rendered struct {
	// Text is the visible text: markup and escapes removed.
	Text  string
	Spans []Span
}

// Styled returns the text of every span with style s, in order of their
// start.
func (r Rendered) Styled(s Style) []string {
	var out []string
	for _, sp := range r.sorted() {
		if sp.Style == s {
			out = append(out, r.Text[sp.Start:sp.End])
		}
	}
	return out
}

// Has reports whether some span of style s shows exactly text.
func (r Rendered) Has(s Style, text string) bool {
	for _, t := range r.Styled(s) {
		if t == text {
			return true
		}
	}
	return false
}

// LinkTo returns the URL of the first link showing text, "" if none.
func (r Rendered) LinkTo(text string) string {
	for _, sp := range r.sorted() {
		if sp.Style == Link && r.Text[sp.Start:sp.End] == text {
			return sp.URL
		}
	}
	return ""
}

// sorted returns the spans by start, outer spans first.
func (r Rendered) sorted() []Span {
	out := append([]Span(nil), r.Spans...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && less(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func less(a, b Span) bool {
	if a.Start != b.Start {
		return a.Start < b.Start
	}
	return a.End > b.End
}

// builder collects visible text and spans.
type builder struct {
	out   strings.Builder
	spans []Span
}

func (b *builder) pos() int { return b.out.Len() }

func (b *builder) span(s Span) {
	if s.End > s.Start {
		b.spans = append(b.spans, s)
	}
}

func (b *builder) result() Rendered {
	return Rendered{Text: b.out.String(), Spans: b.spans}
}
