package adaptertest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/markup"
	"github.com/parleybot/parley/core/markup/markuptest"
)

// testPlainTextAsWritten checks that text in core.FormatText, Markdown-like
// characters and all, reaches the platform as the bot wrote it, as it
// always has: rich text rendering is only for FormatRichText.
func testPlainTextAsWritten(t *testing.T, rig *Rig) {
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	// ">no quote" has no space: the console rig takes "> " at a line start
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

func testLongRichText(t *testing.T, rig *Rig) {
	needRich(t, rig)
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	limit := rig.Adapter.Capabilities().MaxMessageLength
	var md strings.Builder
	for i := 0; utf8.RuneCountInString(md.String()) < 2*limit; i++ {
		md.WriteString("**" + words[i%len(words)] + "** and *" + words[(i+1)%len(words)] + "* 1.5 + 2 = (3.5)!\n\n")
	}
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: md.String(), Format: core.FormatRichText})
	sent := h.settled(t, thread)
	require.GreaterOrEqual(t, len(sent), 2, "rich text over the limit must arrive in several parts")
	visible := make([]Sent, len(sent))
	for i, s := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(s.Text), limit, "part %d is over Capabilities().MaxMessageLength runes", i+1)
		visible[i] = Sent{Text: shown(t, s).Text}
	}
	// Cutting markup could leave a span open, so the parts may be plain
	// text; either way nothing is lost and no markup shows.
	requireReassembles(t, markup.Plain(md.String()), visible)
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
