package telegram

import (
	"strings"
	"testing"

	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
)

func TestRefusedMarkupIsSentAgainAsPlainText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.RefuseNextMarkup()

	res, err := b.sendRich(ada.ID, "Hi **there**, see `make test`.")
	require.NoError(t, err, "a message is never lost to markup")

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "delivered once")
	require.Empty(t, sent[0].ParseMode, "the resend is plain text")
	require.Equal(t, "Hi there, see make test.", sent[0].Plain, "no markers show")
	require.Empty(t, sent[0].Entities)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Equal(t, 2, b.srv.Calls("sendMessage"), "the refused call and the plain one")
	logs := b.logs.String()
	require.Contains(t, logs, "level=WARN")
	require.Contains(t, logs, "telegram refused a message's markup")
	require.Contains(t, logs, "byte_offset=3", "the position Telegram named (where \"*there*\" opens)")
}

func TestRefusedLaterPartIsTheOnlyOneResent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	var md strings.Builder
	for i := 0; md.Len() < 12000; i++ {
		md.WriteString("**bold** and *more* (1.5 + 2 = 3.5!)\n\n")
	}
	b.srv.RefuseMarkupAfter(1)

	res, err := b.sendRich(ada.ID, md.String())
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.GreaterOrEqual(t, len(sent), 3)
	for i, m := range sent {
		if i == 1 {
			require.Empty(t, m.ParseMode, "the refused part goes plain")
			require.Empty(t, m.Entities)
			require.NotContains(t, m.Plain, "**")
			continue
		}
		require.Equal(t, "MarkdownV2", m.ParseMode, "part %d stays formatted", i+1)
		require.NotEmpty(t, styled(m, models.MessageEntityTypeBold), "part %d", i+1)
	}
	require.Equal(t, len(sent)+1, b.srv.Calls("sendMessage"), "one refused call; no part sent twice")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRefusedPlainResendIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.RefuseNextMarkup()
	b.srv.FailAfter("sendMessage", 1, telegramtest.Fault{Code: 400, Description: "Bad Request: message text is empty"})

	res, err := b.sendRich(ada.ID, "**hello**")

	require.Equal(t, "telegram rejected the request", permanentReason(t, err))
	require.ErrorContains(t, err, "sending the plain text of a refused message")
	require.Empty(t, res.PlatformMessageIDs)
	require.Empty(t, b.srv.Sent(ada.ID))
	require.Equal(t, 2, b.srv.Calls("sendMessage"), "resent once, not again")
}

func TestRefusedCaptionIsSentAgainAsPlainText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.RefuseNextMarkup()

	res, err := b.sendImage(ada.ID, "https://example.com/cat.png", "A **cat** on a mat.", core.FormatRichText)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "one photo")
	require.Equal(t, "https://example.com/cat.png", sent[0].Photo)
	require.Equal(t, "A cat on a mat.", sent[0].Plain)
	require.Empty(t, sent[0].ParseMode)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
	require.Contains(t, b.logs.String(), "telegram refused a photo caption's markup")
}

func TestParseEntitiesOffset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err     string
		offset  int
		refused bool
	}{
		{"permanent send failure: telegram rejected the request: bad request, Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 42", 42, true},
		{`bad request, Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\'`, -1, true},
		{"bad request, Bad Request: chat not found", 0, false},
	} {
		offset, refused := parseEntitiesOffset(errString(tc.err))
		require.Equal(t, tc.refused, refused, tc.err)
		require.Equal(t, tc.offset, offset, tc.err)
	}
	_, refused := parseEntitiesOffset(nil)
	require.False(t, refused)
}

type errString string

func (e errString) Error() string { return string(e) }
