package slack

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/markup"
	"github.com/parleybot/parley/core/markup/markuptest"
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

func TestLongRichTextGoesPlainWithoutMrkdwn(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	var md strings.Builder
	for md.Len() < 6000 {
		md.WriteString("**Fish** & *chips* <3\n\n")
	}

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, Format: core.FormatRichText, Text: md.String()})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	var shown strings.Builder
	for i, m := range sent {
		require.False(t, m.Mrkdwn, "part %d: plain text, shown as written", i+1)
		require.LessOrEqual(t, utf8.RuneCountInString(slacktest.Unescape(m.Text)), maxMessageLength)
		shown.WriteString(markuptest.Slack(m.Text, false).Text)
		require.Equal(t, m.TS, res.PlatformMessageIDs[i])
	}
	require.Equal(t, strings.ReplaceAll(markup.Plain(md.String()), "\n", ""), strings.ReplaceAll(shown.String(), "\n", ""))
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
