package slack

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/core"
)

// sendMsg sends msg through the adapter, as an image when it has one.
func (b *testBundle) sendMsg(msg core.OutboundMessage) (core.SendResult, error) {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if msg.ImageURL != "" {
		return b.adapter.SendImage(ctx, msg)
	}
	return b.adapter.Send(ctx, msg)
}

func TestRichTextIsMrkdwn(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	res, err := b.sendMsg(core.OutboundMessage{
		ChannelThreadID: ch, Format: core.FormatRichText,
		Text: "**Done!** See [the docs](https://example.com/a?b=1&c=2) for <b> & snake_case.",
	})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.True(t, sent[0].Mrkdwn)
	shown := markuptest.Slack(sent[0].Text, true)
	require.Equal(t, "Done! See the docs for <b> & snake_case.", shown.Text)
	require.Equal(t, []string{"Done!"}, shown.Styled(markuptest.Bold))
	require.Equal(t, "https://example.com/a?b=1&c=2", shown.LinkTo("the docs"))
	require.Equal(t, []string{sent[0].TS}, res.PlatformMessageIDs)
}

func TestLongRichTextStaysFormatted(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	var md strings.Builder
	for md.Len() < 10000 {
		md.WriteString("**Fish** & *chips* <3\n\n")
	}

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText, Text: md.String()})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.GreaterOrEqual(t, len(sent), 3)
	var shown strings.Builder
	for i, m := range sent {
		require.True(t, m.Mrkdwn, "part %d is formatted", i+1)
		require.LessOrEqual(t, utf8.RuneCountInString(m.Text), maxMessageLength)
		r := markuptest.Slack(m.Text, true)
		require.NotEmpty(t, r.Styled(markuptest.Bold), "part %d keeps its formatting", i+1)
		for _, w := range r.Styled(markuptest.Bold) {
			require.Equal(t, "Fish", w, "part %d", i+1)
		}
		shown.WriteString(r.Text + "\n")
		require.Equal(t, m.TS, res.PlatformMessageIDs[i])
	}
	require.Equal(t, strings.Fields(markup.Plain(md.String())), strings.Fields(shown.String()))
}

func TestRefusedMarkupIsPostedAgainAsPlainText(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText,
		Text: "**Fish** & *chips* for <b>, see `menu_v2`"})
	require.NoError(t, err, "a message is never lost to markup")

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.False(t, sent[0].Mrkdwn, "posted with mrkdwn off")
	r := sent[0].Shown()
	require.Equal(t, "Fish & chips for <b>, see menu_v2", r.Text, "the plain text, shown as written")
	require.Empty(t, r.Spans)
	require.Equal(t, []string{sent[0].TS}, res.PlatformMessageIDs)
	require.Equal(t, 2, b.srv.Calls("chat.postMessage"))
	logs := b.logs.String()
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "slack refused a message's markup")
	require.Contains(t, logs, "error=invalid_arguments")
	require.Contains(t, logs, "pointer=/text", "what Slack pointed at")
}

func TestRefusedLaterPartIsTheOnlyOneResent(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	var md strings.Builder
	for md.Len() < 10000 {
		md.WriteString("**Fish** & *chips* <3\n\n")
	}
	b.srv.RefuseMarkupAfter(1)

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText, Text: md.String()})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.GreaterOrEqual(t, len(sent), 3)
	for i, m := range sent {
		require.Equal(t, i != 1, m.Mrkdwn, "only part 2 goes plain")
		if i == 1 {
			require.Empty(t, m.Shown().Spans)
		} else {
			require.NotEmpty(t, m.Shown().Styled(markuptest.Bold), "part %d stays formatted", i+1)
		}
		require.Equal(t, m.TS, res.PlatformMessageIDs[i])
	}
	require.Len(t, res.PlatformMessageIDs, len(sent))
	require.Equal(t, len(sent)+1, b.srv.Calls("chat.postMessage"), "one refused call; no part sent twice")
}

func TestRefusedPlainResendIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	// The markup is refused before Slack looks at the channel; the plain
	// resend then finds the user gone.
	b.srv.RefuseNextMarkup()
	b.srv.Block(ada.ID)

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText, Text: "**hi**"})

	require.Contains(t, permanentReasonOf(t, err), "archived")
	require.ErrorContains(t, err, "posting the plain text of a refused message")
	require.Empty(t, res.PlatformMessageIDs)
	require.Empty(t, b.srv.Sent(ch))
	require.Equal(t, 2, b.srv.Calls("chat.postMessage"), "resent once, not again")
}

func TestRefusedCaptionIsPostedAgainAsPlainText(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText, ImageURL: "https://example.com/cat.png",
		Text: "A **cat** & 1 < 2"})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Len(t, sent[0].Blocks, 2)
	require.Equal(t, "plain_text", sent[0].Blocks[0].TextType)
	require.Equal(t, "A cat & 1 < 2", sent[0].Blocks[0].Shown().Text)
	require.Equal(t, "https://example.com/cat.png", sent[0].Blocks[1].ImageURL)
	require.Equal(t, []string{sent[0].TS}, res.PlatformMessageIDs)
	require.Contains(t, b.logs.String(), "pointer=/blocks/0/text")
}

func TestImageIsABlock(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	res, err := b.sendMsg(core.OutboundMessage{
		ChannelThreadID: ch, Format: core.FormatRichText,
		ImageURL: "https://example.com/cat.png", Text: "A **cat** & a <mat>.",
	})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, "A cat &amp; a &lt;mat&gt;.", sent[0].Text, "the notification shows the caption as text")
	require.Len(t, sent[0].Blocks, 2)
	section, image := sent[0].Blocks[0], sent[0].Blocks[1]
	require.Equal(t, "section", section.Type)
	require.Equal(t, "mrkdwn", section.TextType)
	shown := markuptest.Slack(section.Text, true)
	require.Equal(t, "A cat & a <mat>.", shown.Text)
	require.Equal(t, []string{"cat"}, shown.Styled(markuptest.Bold))
	require.Equal(t, "image", image.Type)
	require.Equal(t, "https://example.com/cat.png", image.ImageURL)
	require.Equal(t, "A cat & a <mat>.", image.AltText)
	require.Equal(t, []string{sent[0].TS}, res.PlatformMessageIDs)
}

func TestImageWithoutCaptionAndByUser(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.srv.AddUser(grace)

	_, err := b.sendMsg(core.OutboundMessage{ChannelUserID: grace.ID, ImageURL: "https://example.com/cat.png"})
	require.NoError(t, err)

	sent := b.srv.Sent(b.srv.DMChannelOf(grace.ID))
	require.Len(t, sent, 1)
	require.Len(t, sent[0].Blocks, 1, "no empty section")
	require.Equal(t, "Image", sent[0].Blocks[0].AltText)
}

func TestImageLongCaptionFollowsTheImage(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	caption := strings.TrimSpace(strings.Repeat("purr ", 700)) // 3499 characters

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png", Text: caption})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2, "the image, then the caption")
	require.Len(t, sent[0].Blocks, 1, "no cut caption")
	require.Equal(t, "image", sent[0].Blocks[0].Type)
	require.Equal(t, caption, sent[1].Text)
	require.Empty(t, sent[1].Blocks)
	require.Equal(t, []string{sent[0].TS, sent[1].TS}, res.PlatformMessageIDs)
}

func TestImageRetriesAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.RateLimitNext("chat.postMessage", time.Second)

	_, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png", Text: "cat"})
	require.NoError(t, err)
	require.Len(t, b.srv.Sent(ch), 1, "delivered once")
	require.Equal(t, 2, b.srv.Calls("chat.postMessage"))

	_, err = b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "ftp://example.com/cat.png", Text: "cat"})
	require.Contains(t, permanentReasonOf(t, err), "blocks")
	_, err = b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: " x", Text: "cat"})
	require.Contains(t, permanentReasonOf(t, err), "blocks")
	ctx, cancel := contextWithTimeout()
	defer cancel()
	_, err = b.adapter.SendImage(ctx, core.OutboundMessage{ChannelThreadID: ch, Text: "no image"})
	require.Equal(t, "no image URL", permanentReasonOf(t, err))

	b.srv.Block(ada.ID)
	_, err = b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png"})
	require.Contains(t, permanentReasonOf(t, err), "archived")
	require.Len(t, b.srv.Sent(ch), 1)
}
