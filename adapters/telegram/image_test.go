package telegram

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

// sendRich sends Markdown to a chat as rich text.
func (b *testBundle) sendRich(chatID int64, md string) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.Send(ctx, core.OutboundMessage{
		ChannelThreadID: strconv.FormatInt(chatID, 10), Text: md, Format: core.FormatRichText,
	})
}

// sendImage sends an image with a caption to a chat.
func (b *testBundle) sendImage(chatID int64, url, caption string, f core.TextFormat) (core.SendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	return b.adapter.SendImage(ctx, core.OutboundMessage{
		ChannelThreadID: strconv.FormatInt(chatID, 10), Text: caption, Format: f, ImageURL: url,
	})
}

// styled returns the parts of m's plain text shown with entity type typ.
func styled(m telegramtest.SentMessage, typ models.MessageEntityType) []string {
	units := utf16.Encode([]rune(m.Plain))
	var out []string
	for _, e := range m.Entities {
		if e.Type == typ {
			out = append(out, string(utf16.Decode(units[e.Offset:e.Offset+e.Length])))
		}
	}
	return out
}

func TestRichTextIsMarkdownV2(t *testing.T) {
	t.Parallel()
	for _, format := range []string{FormatMarkdown, FormatMarkdownV2} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(a *Adapter) { a.Format = format })
			b.greet(t, ada)

			res, err := b.sendRich(ada.ID, "**Done!** See [the docs](https://example.com/a_(b)) - 1.5 = x_y")
			require.NoError(t, err, "the fake refuses MarkdownV2 that does not parse")

			sent := b.srv.Sent(ada.ID)
			require.Len(t, sent, 1)
			require.Equal(t, "MarkdownV2", sent[0].ParseMode)
			require.Equal(t, "Done! See the docs - 1.5 = x_y", sent[0].Plain)
			require.Equal(t, []string{"Done!"}, styled(sent[0], models.MessageEntityTypeBold))
			require.Equal(t, []string{"the docs"}, styled(sent[0], models.MessageEntityTypeTextLink))
			require.Equal(t, "https://example.com/a_(b)", sent[0].Entities[1].URL)
			require.Equal(t, ids(sent), res.PlatformMessageIDs)
		})
	}
}

func TestLongRichTextStaysFormatted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	var md strings.Builder
	for i := 0; md.Len() < 12000; i++ {
		md.WriteString("**word" + strconv.Itoa(i) + "** and *more* (1.5 + 2 = 3.5!)\n\n")
	}

	res, err := b.sendRich(ada.ID, md.String())
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.GreaterOrEqual(t, len(sent), 3, "over one message: split")
	var joined strings.Builder
	for i, m := range sent {
		require.Equal(t, "MarkdownV2", m.ParseMode, "part %d is formatted", i+1)
		require.LessOrEqual(t, len(utf16.Encode([]rune(m.Text))), 4096, "part %d as sent", i+1)
		bold := styled(m, models.MessageEntityTypeBold)
		require.NotEmpty(t, bold, "part %d shows its bold words", i+1)
		for _, w := range bold {
			require.Regexp(t, `^word\d+$`, w, "part %d: a bold span is a whole word", i+1)
		}
		require.NotContains(t, m.Plain, "**", "part %d: no markers show", i+1)
		joined.WriteString(m.Plain + "\n")
	}
	require.Equal(t, strings.Fields(markup.Plain(md.String())), strings.Fields(joined.String()),
		"the text, in order, nothing lost")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRichTextWithFormatPlainHasNoMarkers(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.Format = FormatPlain })
	b.greet(t, ada)
	require.False(t, b.adapter.Capabilities().RichText, "the core sends plain text to a plain bot")

	res, err := b.sendRich(ada.ID, "# Done\n\n**All** tests pass, see `make test` and [the log](https://ci.example.com/1).")
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1)
	require.Empty(t, sent[0].ParseMode)
	require.Equal(t, "Done\n\nAll tests pass, see make test and the log (https://ci.example.com/1).", sent[0].Plain)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestImageWithRichCaption(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)

	res, err := b.sendImage(ada.ID, "https://example.com/cat.png", "A **cat** on a mat.", core.FormatRichText)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "one photo message")
	require.Equal(t, "https://example.com/cat.png", sent[0].Photo)
	require.Equal(t, "A cat on a mat.", sent[0].Plain)
	require.Equal(t, "MarkdownV2", sent[0].ParseMode)
	require.Equal(t, []string{"cat"}, styled(sent[0], models.MessageEntityTypeBold))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestImageWithPlainCaption(t *testing.T) {
	t.Parallel()
	for _, format := range []string{FormatMarkdown, FormatPlain, FormatMarkdownV2} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(a *Adapter) { a.Format = format })
			b.greet(t, ada)
			const caption = "2*3 = 6. *not bold* [no](link)"

			_, err := b.sendImage(ada.ID, "https://example.com/cat.png", caption, core.FormatText)
			require.NoError(t, err)

			sent := b.srv.Sent(ada.ID)
			require.Len(t, sent, 1)
			require.Equal(t, caption, sent[0].Plain, "shown exactly as written")
			require.Empty(t, sent[0].Entities)
		})
	}
}

func TestImageWithoutCaption(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)

	_, err := b.sendImage(ada.ID, "https://example.com/cat.png", "", core.FormatRichText)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1)
	require.Equal(t, "https://example.com/cat.png", sent[0].Photo)
	require.Empty(t, sent[0].Text)
}

func TestImageLongCaptionFollowsThePhoto(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	purrs := strings.TrimSpace(strings.Repeat("purr ", 250)) // 1249 characters
	caption := "*" + purrs + "*"

	res, err := b.sendImage(ada.ID, "https://example.com/cat.png", caption, core.FormatRichText)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 2, "the photo, then the caption as a message")
	require.Equal(t, "https://example.com/cat.png", sent[0].Photo)
	require.Empty(t, sent[0].Text, "no cut caption")
	require.Empty(t, sent[1].Photo)
	require.Equal(t, purrs, sent[1].Plain)
	require.Equal(t, []string{sent[1].Plain}, styled(sent[1], models.MessageEntityTypeItalic), "still rich text")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestImageRateLimitAndServerErrorsAreRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendPhoto", telegramtest.TooManyRequests(1))
	b.srv.FailNext("sendPhoto", telegramtest.ServerError())

	began := time.Now()
	res, err := b.sendImage(ada.ID, "https://example.com/cat.png", "cat", core.FormatText)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "delivered exactly once")
	require.GreaterOrEqual(t, sent[0].At.Sub(began), time.Second, "not before retry_after")
	require.Equal(t, 3, b.srv.Calls("sendPhoto"))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestImageToABlockedUserIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.Block(ada.ID)

	_, err := b.sendImage(ada.ID, "https://example.com/cat.png", "cat", core.FormatText)
	require.Contains(t, permanentReason(t, err), "blocked the bot")
	require.Equal(t, 1, b.srv.Calls("sendPhoto"), "not retried")
}

func TestImageErrorsArePermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)

	_, err := b.sendImage(ada.ID, "", "cat", core.FormatText)
	require.Equal(t, "no image URL", permanentReason(t, err))
	_, err = b.sendImage(ada.ID, "ftp://example.com/cat.png", "cat", core.FormatText)
	require.Contains(t, permanentReason(t, err), "telegram rejected the request")
	require.ErrorContains(t, err, "wrong file identifier/HTTP URL specified")
	require.Empty(t, b.srv.Sent(ada.ID))
}
