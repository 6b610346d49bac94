package telegramtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"
)

func TestSendPhotoRecorded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")

	msg, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{
		ChatID:    tb.alice.ID,
		Photo:     &models.InputFileString{Data: "https://example.com/cat.png"},
		Caption:   `A *cat* 😺 on [a mat](https://example.com/mat)\.`,
		ParseMode: models.ParseModeMarkdown,
	})
	require.NoError(t, err)

	require.NotEmpty(t, msg.Photo, "the answer is a photo message")
	require.Equal(t, "A cat 😺 on a mat.", msg.Caption)
	sent := tb.srv.Sent(tb.alice.ID)
	require.Len(t, sent, 1)
	require.Equal(t, msg.ID, sent[0].MessageID)
	require.Equal(t, "https://example.com/cat.png", sent[0].Photo)
	require.Equal(t, `A *cat* 😺 on [a mat](https://example.com/mat)\.`, sent[0].Text)
	require.Equal(t, "A cat 😺 on a mat.", sent[0].Plain)
	require.Equal(t, "MarkdownV2", sent[0].ParseMode)
	// Offsets count UTF-16 units: the emoji before the link is two.
	require.Equal(t, []models.MessageEntity{
		{Type: models.MessageEntityTypeBold, Offset: 2, Length: 3},
		{Type: models.MessageEntityTypeTextLink, Offset: 12, Length: 5, URL: "https://example.com/mat"},
	}, sent[0].Entities)
	require.Equal(t, sent[0].Entities, msg.CaptionEntities)
}

func TestSendPhotoAcceptsJSONAndUploads(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddChat(77)

	req, err := http.NewRequest(http.MethodPost, tb.srv.URL()+"/bot"+tb.srv.Token()+"/sendPhoto",
		strings.NewReader(`{"chat_id":77,"photo":"https://example.com/a.jpg","caption":"json"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := tb.client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	b, _ := tb.newBot(t)
	_, err = b.SendPhoto(context.Background(), &bot.SendPhotoParams{
		ChatID: 77,
		Photo:  &models.InputFileUpload{Filename: "cat.png", Data: bytes.NewReader(pngOf(t, 8, 8))},
	})
	require.NoError(t, err)

	sent := tb.srv.WaitSent(t, 77, 2, wait)
	require.Equal(t, "https://example.com/a.jpg", sent[0].Photo)
	require.Equal(t, "json", sent[0].Plain)
	require.Equal(t, "attach://photo", sent[1].Photo)
	require.Empty(t, sent[1].Text)
}

func TestSendPhotoValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	send := func(chatID int64, photo, caption string, mode models.ParseMode) error {
		_, err := b.SendPhoto(context.Background(), &bot.SendPhotoParams{
			ChatID: chatID, Photo: &models.InputFileString{Data: photo}, Caption: caption, ParseMode: mode,
		})
		return err
	}
	const cat = "https://example.com/cat.png"

	status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "sendPhoto", url.Values{"chat_id": {"1001"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, string(body), "there is no photo in the request")
	require.ErrorContains(t, send(tb.alice.ID, "ftp://example.com/cat.png", "", ""), "wrong file identifier/HTTP URL specified")
	require.ErrorContains(t, send(tb.alice.ID, cat, "5.00", models.ParseModeMarkdown),
		`can't parse entities: Character '.' is reserved`)
	require.ErrorContains(t, send(tb.alice.ID, cat, strings.Repeat("a", 1025), ""), "message caption is too long")
	require.NoError(t, send(tb.alice.ID, cat, strings.Repeat("a", 1024), ""))
	// The limit applies to the text a user reads, after the markup.
	require.NoError(t, send(tb.alice.ID, cat, "*"+strings.Repeat("a", 1024)+"*", models.ParseModeMarkdown))
	require.ErrorContains(t, send(31337, cat, "", ""), "chat not found")
	tb.srv.Block(tb.alice.ID)
	err := send(tb.alice.ID, cat, "", "")
	require.ErrorIs(t, err, bot.ErrorForbidden)

	require.Len(t, tb.srv.Sent(tb.alice.ID), 2)
	require.Equal(t, 8, tb.srv.Calls("sendPhoto"))
}

func TestSendPhotoRawForm(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddChat(88)
	status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "sendPhoto", url.Values{
		"chat_id": {"88"}, "photo": {"https://example.com/x.png"}, "caption": {"*unclosed"}, "parse_mode": {"MarkdownV2"},
	})
	require.Equal(t, http.StatusBadRequest, status)
	var r apiResponse
	require.NoError(t, json.Unmarshal(body, &r))
	require.Equal(t, "Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 0", r.Description)
	require.Empty(t, tb.srv.Sent(88))
}

func TestSendMessageRecordsEntities(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")

	msg, err := b.SendMessage(context.Background(), &bot.SendMessageParams{
		ChatID:    tb.alice.ID,
		Text:      ">*quoted* `code`\n>more\nafter ```go\nx\n```",
		ParseMode: models.ParseModeMarkdown,
	})
	require.NoError(t, err)

	want := []models.MessageEntity{
		{Type: models.MessageEntityTypeBlockquote, Offset: 0, Length: 16},
		{Type: models.MessageEntityTypeBold, Offset: 0, Length: 6},
		{Type: models.MessageEntityTypeCode, Offset: 7, Length: 4},
		{Type: models.MessageEntityTypePre, Offset: 23, Length: 2, Language: "go"},
	}
	sent := tb.srv.Sent(tb.alice.ID)
	require.Equal(t, "quoted code\nmore\nafter x\n", sent[0].Plain)
	require.Equal(t, want, sent[0].Entities)
	require.Equal(t, want, msg.Entities)
}
