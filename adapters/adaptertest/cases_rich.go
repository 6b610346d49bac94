package adaptertest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
)

// testPlainTextAsWritten checks that text in core.FormatText, Markdown-like
// characters and all, reaches the platform as the bot wrote it, as it
// always has: rich text rendering is only for FormatRichText.
func testPlainTextAsWritten(t *testing.T, rig *Rig) {
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	// ">no quote" has no space: the terminal rig takes "> " at a line start
	// for its prompt.
	const text = "**not bold** _nor this_ [a](b) 2*3*4 <tag> & `c` # no heading\n>no quote\n- no list"
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: text})
	sent := h.settled(t, thread)
	require.Len(t, sent, 1)
	require.Equal(t, text, sent[0].Text)
	h.checkIDs(t, res, sent)
}

// needRich skips a case for an adapter without rich text, whose rich
// text the core turns into plain text before Send.
func needRich(t *testing.T, rig *Rig) {
	t.Helper()
	if !rig.Adapter.Capabilities().RichText {
		t.Skip("adaptertest: the adapter has no rich text (Capabilities().RichText is false): the core sends it as plain text")
	}
}

// shown returns what the platform shows of s, skipping when the rig
// cannot tell.
func shown(t *testing.T, s Sent) markuptest.Rendered {
	t.Helper()
	if s.Shown == nil {
		t.Skip("adaptertest: the rig cannot tell what the platform shows (Sent.Shown is nil)")
	}
	return *s.Shown
}

func testRichText(t *testing.T, rig *Rig) {
	needRich(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	const md = "**bold**, *italic*, ~~struck~~, `code` and a [link](https://example.com/docs)"
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: md, Format: core.FormatRichText})
	sent := h.settled(t, thread)
	require.Len(t, sent, 1, "a short rich text is one message")
	got := shown(t, sent[0])
	require.Equal(t, "bold, italic, struck, code and a link", got.Text, "markup must not show as text")
	require.Equal(t, []string{"bold"}, got.Styled(markuptest.Bold))
	require.Equal(t, []string{"italic"}, got.Styled(markuptest.Italic))
	require.Equal(t, []string{"struck"}, got.Styled(markuptest.Strike))
	require.Equal(t, []string{"code"}, got.Styled(markuptest.Code))
	require.Equal(t, "https://example.com/docs", got.LinkTo("link"))
	h.checkIDs(t, res, sent)
}

// reservedMD has every character one of the platforms reserves, meant
// literally, and lines that would start block markup if not escaped.
const (
	reservedMD = "Reserved: _ * [ ] ( ) ~ ` > # + - = | { } . ! \\\\ & < > @ :x: <@1> a_b_c 2 * 3\n" +
		"\\# not a heading\n\\> not a quote\n1\\. not a list\n\\- not a list"
	reservedShown = "Reserved: _ * [ ] ( ) ~ ` > # + - = | { } . ! \\ & < > @ :x: <@1> a_b_c 2 * 3\n" +
		"# not a heading\n> not a quote\n1. not a list\n- not a list"
)

func testRichTextReserved(t *testing.T, rig *Rig) {
	needRich(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	res, err := h.trySendMsg(core.OutboundMessage{ChannelThreadID: thread, Text: reservedMD, Format: core.FormatRichText})
	require.NoError(t, err, "the platform must accept escaped markup (no parse error)")
	sent := h.settled(t, thread)
	require.Len(t, sent, 1)
	got := shown(t, sent[0])
	require.Equal(t, reservedShown, got.Text, "every character shows as written")
	require.Empty(t, got.Spans, "nothing is styled")
	h.checkIDs(t, res, sent)
}

// richParagraphs returns Markdown of at least n runes: paragraphs with a
// bold word, an italic word and characters Telegram reserves.
func richParagraphs(n int) string {
	var md strings.Builder
	for i := 0; utf8.RuneCountInString(md.String()) < n; i++ {
		md.WriteString("**" + words[i%len(words)] + "** and *" + words[(i+1)%len(words)] + "* 1.5 + 2 = (3.5)!\n\n")
	}
	return md.String()
}

// requireFormatted requires that a part of richParagraphs shows styled:
// bold and italic words, each span a whole word (a span cut at the split
// would show half a word styled, or its markers).
func requireFormatted(t *testing.T, i int, got markuptest.Rendered) {
	t.Helper()
	for _, st := range []markuptest.Style{markuptest.Bold, markuptest.Italic} {
		spans := got.Styled(st)
		require.NotEmpty(t, spans, "part %d lost its formatting: no %s text in %q", i+1, st, head(got.Text))
		for _, w := range spans {
			require.Contains(t, words, w, "part %d: %s text %q is not one whole word", i+1, st, w)
		}
	}
	requireNoMarkers(t, i, got.Text)
}

// requireNoMarkers requires that no Markdown marker shows as text.
func requireNoMarkers(t *testing.T, i int, text string) {
	t.Helper()
	for _, m := range []string{"**", "`", "](", "~~"} {
		require.NotContains(t, text, m, "part %d shows the marker %q", i+1, m)
	}
}

// requirePlain requires that a part shows as plain text: nothing styled
// (a link the platform makes of a bare URL aside) and no markers.
func requirePlain(t *testing.T, i int, got markuptest.Rendered) {
	t.Helper()
	for _, sp := range got.Spans {
		require.Equal(t, markuptest.Link, sp.Style, "part %d should be plain text, but %q shows %s",
			i+1, got.Text[sp.Start:sp.End], sp.Style)
	}
	requireNoMarkers(t, i, got.Text)
}

// requireSameText requires that the parts show text, nothing lost and
// nothing twice. Where the platform shows the whole text in one message
// (HTML), only the words and their order are compared: how an HTML
// reader spaces paragraphs is its own affair.
func requireSameText(t *testing.T, rig *Rig, text string, visible []Sent) {
	t.Helper()
	if !rig.WholeRichText {
		requireReassembles(t, text, visible)
		return
	}
	var all []string
	for _, v := range visible {
		all = append(all, strings.Fields(v.Text)...)
	}
	require.Equal(t, strings.Fields(text), all, "adaptertest: the text shown is not the text sent")
}

// testLongRichText sends rich text of twice the limit: it arrives in
// parts within the limit (one message where the platform has none for
// rich text), each keeping its formatting, nothing lost.
func testLongRichText(t *testing.T, rig *Rig) {
	needRich(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	limit := rig.Adapter.Capabilities().MaxMessageLength
	md := richParagraphs(2 * limit)
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: md, Format: core.FormatRichText})
	sent := h.settled(t, thread)
	if rig.WholeRichText {
		require.Len(t, sent, 1, "the platform shows rich text whole (Rig.WholeRichText)")
	} else {
		require.GreaterOrEqual(t, len(sent), 2, "rich text over the limit must arrive in several parts")
	}
	visible := make([]Sent, len(sent))
	for i, s := range sent {
		if !rig.WholeRichText {
			require.LessOrEqual(t, utf8.RuneCountInString(s.Text), limit, "part %d is over Capabilities().MaxMessageLength runes", i+1)
		}
		got := shown(t, s)
		requireFormatted(t, i, got)
		visible[i] = Sent{Text: got.Text}
	}
	requireSameText(t, rig, markup.Plain(md), visible)
	h.checkIDs(t, res, sent)
}

// testLongCodeBlock sends one fenced code block with a language, over the
// limit: every part shows its stretch of the code as a code block with the
// language, and the stretches are the code, exactly.
func testLongCodeBlock(t *testing.T, rig *Rig) {
	needRich(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	limit := rig.Adapter.Capabilities().MaxMessageLength
	var lines []string
	for i, n := 1, 0; n < 2*limit+limit/2; i++ {
		l := fmt.Sprintf("fmt.Println(\"héllo 世界 %d\") // *not* _markup_ [x](y) <b>", i)
		lines = append(lines, l)
		n += utf8.RuneCountInString(l) + 1
	}
	code := strings.Join(lines, "\n")
	md := "```go\n" + code + "\n```"
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: md, Format: core.FormatRichText})
	sent := h.settled(t, thread)
	if rig.WholeRichText {
		require.Len(t, sent, 1, "the platform shows rich text whole (Rig.WholeRichText)")
	} else {
		require.GreaterOrEqual(t, len(sent), 2, "a code block over the limit must arrive in several parts")
	}
	pieces := make([]string, len(sent))
	for i, s := range sent {
		if !rig.WholeRichText {
			require.LessOrEqual(t, utf8.RuneCountInString(s.Text), limit, "part %d is over Capabilities().MaxMessageLength runes", i+1)
		}
		got := shown(t, s)
		var pre []markuptest.Span
		for _, sp := range got.Spans {
			if sp.Style == markuptest.Pre {
				pre = append(pre, sp)
			}
		}
		require.Len(t, pre, 1, "part %d must show its code as one code block: %q", i+1, head(got.Text))
		if !rig.NoCodeLanguage {
			require.Equal(t, "go", pre[0].Language, "part %d: the code block keeps its language", i+1)
		}
		piece := got.Text[pre[0].Start:pre[0].End]
		require.Equal(t, strings.TrimSpace(got.Text), strings.TrimSpace(piece), "part %d shows nothing but the code", i+1)
		// A code block's text may end with the line break before its
		// closing fence.
		pieces[i] = strings.TrimSuffix(piece, "\n")
	}
	require.Equal(t, code, strings.Join(pieces, "\n"), "the parts' code is the code, exactly, cut between lines")
	h.checkIDs(t, res, sent)
}

// refusedMD is a short rich text with markup of every common kind.
const refusedMD = "**Refused** once, then `plain`: see [the docs](https://example.com/docs) — 1.5 + 2 = (3.5)!"

// testRefusedMarkup makes the platform refuse a formatted message as
// malformed: the send still succeeds, the message arriving once as plain
// text with no markup showing.
func testRefusedMarkup(t *testing.T, rig *Rig) {
	needRich(t, rig)
	if rig.RefuseNextMarkup == nil {
		t.Skip("adaptertest: the fake cannot refuse markup (Rig.RefuseNextMarkup is nil)")
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	rig.RefuseNextMarkup(t)
	res, err := h.trySendMsg(core.OutboundMessage{ChannelThreadID: thread, Text: refusedMD, Format: core.FormatRichText})
	require.NoError(t, err, "a message the platform refuses as malformed markup must go as plain text, not be lost")
	sent := h.settled(t, thread)
	require.Len(t, sent, 1, "the refused message arrives once")
	got := shown(t, sent[0])
	requirePlain(t, 0, got)
	require.Equal(t, strings.TrimSpace(markup.Plain(refusedMD)), strings.TrimSpace(got.Text), "the message's text, as plain text")
	h.checkIDs(t, res, sent)

	// The refusal was for that message only: the next is formatted.
	before := len(sent) + 1 // and the sentinel that followed
	res = h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: "**again**", Format: core.FormatRichText})
	sent = h.settled(t, thread)[before:]
	require.Len(t, sent, 1)
	require.Equal(t, []string{"again"}, shown(t, sent[0]).Styled(markuptest.Bold), "the next message is formatted again")
	h.checkIDs(t, res, sent)
}

// testRefusedMarkupLater makes the platform refuse the second part of a
// long rich text: that part arrives as plain text, the parts before and
// after it formatted, each once.
func testRefusedMarkupLater(t *testing.T, rig *Rig) {
	needRich(t, rig)
	if rig.WholeRichText {
		t.Skip("adaptertest: the platform shows rich text whole (Rig.WholeRichText): there is no later part")
	}
	if rig.RefuseMarkupAfter == nil {
		t.Skip("adaptertest: the fake cannot refuse a later part's markup (Rig.RefuseMarkupAfter is nil)")
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	limit := rig.Adapter.Capabilities().MaxMessageLength
	md := richParagraphs(3 * limit)
	rig.RefuseMarkupAfter(t, 1)
	res, err := h.trySendMsg(core.OutboundMessage{ChannelThreadID: thread, Text: md, Format: core.FormatRichText})
	require.NoError(t, err, "a part the platform refuses as malformed markup must go as plain text, not be lost")
	sent := h.settled(t, thread)
	require.GreaterOrEqual(t, len(sent), 3)
	visible := make([]Sent, len(sent))
	// The refused part is part 2; its plain text may take more than one
	// message (escapes can take it over the limit), then formatting
	// resumes.
	plainUntil := 1
	for i, s := range sent {
		got := shown(t, s)
		require.LessOrEqual(t, utf8.RuneCountInString(s.Text), limit, "part %d is over Capabilities().MaxMessageLength runes", i+1)
		switch {
		case i == 0:
			requireFormatted(t, i, got)
		case i == plainUntil && len(got.Styled(markuptest.Bold)) == 0:
			requirePlain(t, i, got)
			plainUntil++
		default:
			requireFormatted(t, i, got)
		}
		visible[i] = Sent{Text: got.Text}
	}
	require.Greater(t, plainUntil, 1, "part 2, which the platform refused, must arrive as plain text")
	require.Less(t, plainUntil, len(sent), "the parts after the refused one are formatted again")
	requireReassembles(t, markup.Plain(md), visible)
	h.checkIDs(t, res, sent)
}

// needImages skips a case for an adapter that is not a core.ImageSender.
func needImages(t *testing.T, rig *Rig) {
	t.Helper()
	if _, ok := rig.Adapter.(core.ImageSender); !ok {
		t.Skip("adaptertest: the adapter is not a core.ImageSender: the core sends the caption and the URL as text")
	}
}

const imageURL = "https://example.com/images/cat.png"

func testImage(t *testing.T, rig *Rig) {
	needImages(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	format := core.FormatText
	if rig.Adapter.Capabilities().RichText {
		format = core.FormatRichText
	}
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: "A **cat** on a mat.", Format: format, ImageURL: imageURL})
	sent := h.settled(t, thread)
	require.Len(t, sent, 1, "an image with a short caption is one message")
	require.Equal(t, imageURL, sent[0].ImageURL, "the platform got the image")
	if format == core.FormatRichText {
		got := shown(t, sent[0])
		require.Equal(t, "A cat on a mat.", got.Text, "the caption, with no markup showing")
		require.Equal(t, []string{"cat"}, got.Styled(markuptest.Bold))
	} else {
		require.Equal(t, "A **cat** on a mat.", sent[0].Text)
	}
	h.checkIDs(t, res, sent)
}

func testImageLongCaption(t *testing.T, rig *Rig) {
	needImages(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	// Longer than any platform's caption (Telegram 1024, Slack 3000,
	// Discord 4096): it cannot go with the image whole.
	caption := paragraph("caption", 2500) + "\n\n" + paragraph("more", 2500)
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: caption, ImageURL: imageURL})
	sent := h.settled(t, thread)
	require.NotEmpty(t, sent)
	require.Equal(t, imageURL, sent[0].ImageURL, "the image comes first")
	limit := rig.Adapter.Capabilities().MaxMessageLength
	for i, s := range sent[1:] {
		require.Empty(t, s.ImageURL, "the image is shown once")
		require.LessOrEqual(t, utf8.RuneCountInString(s.Text), limit, "part %d is over Capabilities().MaxMessageLength runes", i+2)
	}
	requireReassembles(t, caption, sent)
	h.checkIDs(t, res, sent)
}
