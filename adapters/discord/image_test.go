package discord

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/markup"
	"github.com/parleybot/parley/core/markup/markuptest"
)

// sendMsg sends msg through the adapter, as an image when it has one.
func (b *testBundle) sendMsg(msg core.OutboundMessage) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if msg.ImageURL != "" {
		return b.adapter.SendImage(ctx, msg)
	}
	return b.adapter.Send(ctx, msg)
}

func TestRichTextIsDiscordMarkdown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	res, err := b.sendMsg(core.OutboundMessage{
		ChannelThreadID: ch, IdempotencyKey: "run-30", Format: core.FormatRichText,
		Text: "**Done!** See [the docs](https://example.com/a_(b)), 2 * 3 and snake_case. <@1>",
	})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	shown := markuptest.Discord(sent[0].Content)
	require.Equal(t, "Done! See the docs, 2 * 3 and snake_case. <@1>", shown.Text, "no stray markup, no mention")
	require.Equal(t, []string{"Done!"}, shown.Styled(markuptest.Bold))
	require.Equal(t, "https://example.com/a_%28b%29", shown.LinkTo("the docs"))
	require.Equal(t, "run-30.0", sent[0].Nonce)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestLongRichTextGoesPlainAndEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	var md strings.Builder
	for i := 0; md.Len() < 3000; i++ {
		md.WriteString("**item_" + strconv.Itoa(i) + "** costs 2*3.\n\n")
	}

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-31", Format: core.FormatRichText, Text: md.String()})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.GreaterOrEqual(t, len(sent), 2)
	var shown strings.Builder
	for i, m := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(m.Content), 2000, "part %d", i+1)
		r := markuptest.Discord(m.Content)
		require.Empty(t, r.Spans, "part %d shows no styles: it is plain text", i+1)
		shown.WriteString(r.Text)
	}
	require.Equal(t, strings.ReplaceAll(markup.Plain(md.String()), "\n", ""), strings.ReplaceAll(shown.String(), "\n", ""),
		"in order, nothing lost, shown as written")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestImageIsAnEmbed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	res, err := b.sendMsg(core.OutboundMessage{
		ChannelThreadID: ch, IdempotencyKey: "job-7", Format: core.FormatRichText,
		ImageURL: "https://example.com/cat.png", Text: "A **cat** on a mat.",
	})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Empty(t, sent[0].Content)
	require.Len(t, sent[0].Embeds, 1)
	require.Equal(t, "https://example.com/cat.png", sent[0].Embeds[0].ImageURL)
	shown := markuptest.Discord(sent[0].Embeds[0].Description)
	require.Equal(t, "A cat on a mat.", shown.Text)
	require.Equal(t, []string{"cat"}, shown.Styled(markuptest.Bold))
	require.Equal(t, "job-7.0", sent[0].Nonce)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)

	// The core sends again after a crash: Discord drops it by its nonce.
	again, err := b.sendMsg(core.OutboundMessage{
		ChannelThreadID: ch, IdempotencyKey: "job-7", Format: core.FormatRichText,
		ImageURL: "https://example.com/cat.png", Text: "A **cat** on a mat.",
	})
	require.NoError(t, err)
	require.Equal(t, res, again)
	require.Len(t, b.srv.Sent(ch), 1)
}

func TestImageCaptionAsWritten(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	_, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png", Text: "*light* markdown"})
	require.NoError(t, err)
	_, err = b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/dog.png"})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2)
	require.Equal(t, "*light* markdown", sent[0].Embeds[0].Description)
	require.Equal(t, "https://example.com/dog.png", sent[1].Embeds[0].ImageURL)
	require.Empty(t, sent[1].Embeds[0].Description)
}

func TestImageLongCaptionFollowsTheEmbed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	caption := strings.TrimSpace(strings.Repeat("purr ", 1000)) // 4999 characters

	res, err := b.sendMsg(core.OutboundMessage{
		ChannelThreadID: ch, IdempotencyKey: "job-8", ImageURL: "https://example.com/cat.png", Text: caption,
	})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 4, "the image, then the caption in 2000-character parts")
	require.Empty(t, sent[0].Embeds[0].Description, "no cut caption")
	require.Equal(t, caption, strings.Join(contents(sent[1:]), ""))
	for i, m := range sent {
		require.Equal(t, "job-8."+strconv.Itoa(i), m.Nonce, "one nonce sequence for the whole send")
	}
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestImageRetriesAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.RateLimitNext("messages", 300*time.Millisecond)
	b.srv.FailNext("messages", 502, 0, "Bad Gateway")

	_, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png", Text: "cat"})
	require.NoError(t, err)
	require.Len(t, b.srv.Sent(ch), 1, "delivered once")
	require.Equal(t, 3, b.srv.Calls("messages"))

	_, err = b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "ftp://example.com/cat.png", Text: "cat"})
	require.Contains(t, permanentReason(t, err), "invalid form body")
	_, err = b.adapter.SendImage(context.Background(), core.OutboundMessage{ChannelThreadID: ch, ImageURL: " "})
	require.Equal(t, "no image URL", permanentReason(t, err))

	b.srv.Block(ada.ID)
	_, err = b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, ImageURL: "https://example.com/cat.png"})
	require.Contains(t, permanentReason(t, err), "does not accept DMs")
	require.Len(t, b.srv.Sent(ch), 1)
}
