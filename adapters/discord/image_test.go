package discord

import (
	"context"
	"strconv"
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

func TestLongRichTextStaysFormatted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	var md strings.Builder
	for i := 0; md.Len() < 5000; i++ {
		md.WriteString("**item_" + strconv.Itoa(i) + "** costs 2*3.\n\n")
	}

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-31", Format: core.FormatRichText, Text: md.String()})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.GreaterOrEqual(t, len(sent), 3)
	var shown strings.Builder
	for i, m := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(m.Content), 2000, "part %d", i+1)
		r := markuptest.Discord(m.Content)
		bold := r.Styled(markuptest.Bold)
		require.NotEmpty(t, bold, "part %d keeps its formatting", i+1)
		for _, w := range bold {
			require.Regexp(t, `^item_\d+$`, w, "part %d: a bold span is a whole item", i+1)
		}
		require.Equal(t, "run-31."+strconv.Itoa(i), m.Nonce)
		shown.WriteString(r.Text + "\n")
	}
	require.Equal(t, strings.Fields(markup.Plain(md.String())), strings.Fields(shown.String()), "in order, nothing lost, shown as written")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRefusedMarkupIsSentAgainAsPlainText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.RefuseNextMarkup()

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-32", Format: core.FormatRichText,
		Text: "**Done** with `snake_case` and 2 * 3 <@1>"})
	require.NoError(t, err, "a message is never lost to markup")

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	r := markuptest.Discord(sent[0].Content)
	require.Equal(t, "Done with snake_case and 2 * 3 <@1>", r.Text, "the plain text, escaped so it shows as written")
	require.Empty(t, r.Spans)
	require.Equal(t, "run-32.0p.0", sent[0].Nonce, "the resend has a nonce of its own")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, 2, b.srv.Calls("messages"))
	logs := b.logs.String()
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "discord refused a message's markup")
	require.Contains(t, logs, "field=content", "the field Discord named")
}

func TestRefusedLaterPartIsTheOnlyOneResent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	var md strings.Builder
	for i := 0; md.Len() < 5000; i++ {
		md.WriteString("**item_" + strconv.Itoa(i) + "** costs 2*3.\n\n")
	}
	b.srv.RefuseMarkupAfter(1)

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-33", Format: core.FormatRichText, Text: md.String()})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.GreaterOrEqual(t, len(sent), 3)
	for i, m := range sent {
		r := markuptest.Discord(m.Content)
		if i == 1 {
			require.Empty(t, r.Spans, "the refused part goes plain")
			require.Equal(t, "run-33.1p.0", m.Nonce)
			continue
		}
		require.NotEmpty(t, r.Styled(markuptest.Bold), "part %d stays formatted", i+1)
	}
	require.Equal(t, len(sent)+1, b.srv.Calls("messages"), "one refused call; no part sent twice")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRefusedPlainTextThatEscapesLongIsSplit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	// Stars in code need no escapes, so the part fits; as plain text each
	// is escaped and the resend is over 2000 characters, so it is cut.
	stars := strings.Repeat("*", 1980)
	md := "**a** `" + stars + "`"
	b.srv.RefuseNextMarkup()

	res, err := b.sendMsg(core.OutboundMessage{ChannelThreadID: ch, IdempotencyKey: "run-34", Format: core.FormatRichText, Text: md})
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.GreaterOrEqual(t, len(sent), 2, "the escaped plain text is over 2000 characters")
	var shown strings.Builder
	for i, m := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(m.Content), 2000, "part %d", i+1)
		r := markuptest.Discord(m.Content)
		require.Empty(t, r.Spans, "part %d is plain", i+1)
		shown.WriteString(r.Text)
	}
	require.Equal(t, "a"+stars, strings.ReplaceAll(shown.String(), " ", ""), "shown as written, nothing lost")
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
