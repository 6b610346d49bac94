package telegramtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

func TestGetMe(t *testing.T) {
	t.Parallel()
	tb := setup(t, telegramtest.WithBotUser(4242, "other_bot"), telegramtest.WithToken("4242:secret-Token"))
	b, _ := tb.newBot(t)

	me, err := b.GetMe(context.Background())
	require.NoError(t, err)
	require.Equal(t, int64(4242), me.ID)
	require.Equal(t, "other_bot", me.Username)
	require.Equal(t, "Parley", me.FirstName)
	require.True(t, me.IsBot)
	require.Equal(t, int64(4242), tb.srv.BotID())
	require.Equal(t, 1+1, tb.srv.Calls("getMe"), "bot.New calls getMe too")
}

func TestBadTokenIsUnauthorized(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	_, err := bot.New("123456:revoked", bot.WithServerURL(tb.srv.URL()))
	require.ErrorIs(t, err, bot.ErrorUnauthorized)
	require.NotContains(t, err.Error(), "revoked")

	status, body := tb.rawCall(context.Background(), t, "123456:revoked", "getMe", nil)
	require.Equal(t, http.StatusUnauthorized, status)
	require.JSONEq(t, `{"ok":false,"error_code":401,"description":"Unauthorized"}`, string(body))
}

func TestUnknownMethodIsNotFound(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "sendTelepathy", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.JSONEq(t, `{"ok":false,"error_code":404,"description":"Not Found"}`, string(body))
	require.Equal(t, 1, tb.srv.Calls("sendtelepathy"))
}

func TestLongPollingDeliversInOrderWithoutRedelivery(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, updates := tb.newBot(t)
	start(t, b)

	sent1 := tb.srv.SendPrivate(tb.alice, "hello")
	sent2 := tb.srv.SendPrivate(tb.alice, "are you there?")
	got1, got2 := receive(t, updates), receive(t, updates)
	// The third poll confirms the first two through its offset; a
	// redelivery would show up here before the third message.
	sent3 := tb.srv.SendPrivate(tb.alice, "third")
	got3 := receive(t, updates)

	require.Equal(t, []int64{sent1.ID, sent2.ID, sent3.ID}, []int64{got1.ID, got2.ID, got3.ID})
	require.Equal(t, []string{"hello", "are you there?", "third"}, []string{got1.Message.Text, got2.Message.Text, got3.Message.Text})
	require.Equal(t, []int{1, 2, 3}, []int{got1.Message.ID, got2.Message.ID, got3.Message.ID})
	require.Equal(t, models.Chat{ID: 1001, Type: models.ChatTypePrivate, FirstName: "Alice", Username: "alice"}, got1.Message.Chat)
	require.Equal(t, &models.User{ID: 1001, FirstName: "Alice", Username: "alice"}, got1.Message.From)
	select {
	case u := <-updates:
		t.Fatalf("unexpected extra update %+v", u)
	default:
	}
}

func TestGetUpdatesOffsetAndLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	u1 := tb.srv.SendPrivate(tb.alice, "one")
	u2 := tb.srv.SendPrivate(tb.alice, "two")

	var got []models.Update
	r := tb.getUpdates(t, url.Values{"limit": {"1"}})
	require.True(t, r.OK)
	require.NoError(t, json.Unmarshal(r.Result, &got))
	require.Equal(t, []models.Update{u1}, got)

	r = tb.getUpdates(t, nil)
	require.NoError(t, json.Unmarshal(r.Result, &got))
	require.Equal(t, []models.Update{u1, u2}, got, "unconfirmed updates are delivered again")

	r = tb.getUpdates(t, url.Values{"offset": {"2"}})
	require.NoError(t, json.Unmarshal(r.Result, &got))
	require.Equal(t, []models.Update{u2}, got)

	r = tb.getUpdates(t, url.Values{"offset": {"3"}})
	require.JSONEq(t, `[]`, string(r.Result))
	require.Equal(t, 0, tb.srv.Pending())
}

func TestUpdateShapes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	group := tb.srv.SendGroup(-500, tb.alice, "hi all")
	post := tb.srv.SendChannelPost(-100200, "news")
	own := tb.srv.SendOwn(tb.alice.ID, "echo")
	edit := tb.srv.EditPrivate(tb.alice, 7, "fixed")

	var got []models.Update
	r := tb.getUpdates(t, nil)
	require.NoError(t, json.Unmarshal(r.Result, &got))
	require.Equal(t, []models.Update{group, post, own, edit}, got)

	require.Equal(t, models.ChatTypeGroup, group.Message.Chat.Type)
	require.Equal(t, int64(-500), group.Message.Chat.ID)
	require.Equal(t, models.ChatTypeChannel, post.ChannelPost.Chat.Type)
	require.Nil(t, post.ChannelPost.From)
	require.True(t, own.Message.From.IsBot)
	require.Equal(t, tb.srv.BotID(), own.Message.From.ID)
	require.Equal(t, tb.alice.ID, own.Message.Chat.ID)
	require.Equal(t, 7, edit.EditedMessage.ID)
	require.NotZero(t, edit.EditedMessage.EditDate)
	require.Equal(t, []int64{1, 2, 3, 4}, []int64{group.ID, post.ID, own.ID, edit.ID})
}

func TestGetUpdatesHoldsUntilAnUpdateArrives(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	result := make(chan apiResponse, 1)
	go func() {
		_, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "getUpdates", url.Values{"timeout": {"30"}})
		var r apiResponse
		_ = json.Unmarshal(body, &r)
		result <- r
	}()
	tb.srv.WaitCalls(t, "getUpdates", 1, wait)
	select {
	case r := <-result:
		t.Fatalf("getUpdates answered before any update: %+v", r)
	default:
	}

	u := tb.srv.SendPrivate(tb.alice, "wake up")

	select {
	case r := <-result:
		var got []models.Update
		require.NoError(t, json.Unmarshal(r.Result, &got))
		require.Equal(t, []models.Update{u}, got)
	case <-time.After(wait):
		t.Fatal("held getUpdates did not return after the update")
	}
}

func TestGetUpdatesReturnsEmptyAfterTimeout(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	began := time.Now()
	r := tb.getUpdates(t, url.Values{"timeout": {"1"}})

	require.True(t, r.OK)
	require.JSONEq(t, `[]`, string(r.Result))
	require.GreaterOrEqual(t, time.Since(began), time.Second)
}

func TestNewerPollEndsHeldOne(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	result := make(chan apiResponse, 1)
	go func() {
		_, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "getUpdates", url.Values{"timeout": {"30"}})
		var r apiResponse
		_ = json.Unmarshal(body, &r)
		result <- r
	}()
	tb.srv.WaitCalls(t, "getUpdates", 1, wait)

	// The call is counted as it arrives, before the poll is held: should
	// the newer poll overtake it, the next newer one ends it.
	var old apiResponse
	require.Eventually(t, func() bool {
		if r := tb.getUpdates(t, nil); !r.OK {
			return false // the newer poll itself must succeed
		}
		select {
		case old = <-result:
			return true
		default:
			return false
		}
	}, wait, 10*time.Millisecond, "the older poll was not ended")
	require.Equal(t, http.StatusConflict, old.ErrorCode)
	require.Contains(t, old.Description, "terminated by other getUpdates request")
}

func TestSendMessageRecorded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	in := tb.srv.SendPrivate(tb.alice, "hi")

	msg, err := b.SendMessage(context.Background(), &bot.SendMessageParams{
		ChatID:          tb.alice.ID,
		Text:            `Hello *Alice*\!`,
		ParseMode:       models.ParseModeMarkdown,
		ReplyParameters: &models.ReplyParameters{MessageID: in.Message.ID},
	})
	require.NoError(t, err)

	require.Equal(t, 2, msg.ID, "message ids are shared by both sides of a chat")
	require.Equal(t, tb.srv.BotID(), msg.From.ID)
	require.Equal(t, tb.alice.ID, msg.Chat.ID)
	require.Equal(t, "Hello Alice!", msg.Text)
	sent := tb.srv.Sent(tb.alice.ID)
	require.Len(t, sent, 1)
	require.Equal(t, tb.alice.ID, sent[0].ChatID)
	require.Equal(t, 2, sent[0].MessageID)
	require.Equal(t, `Hello *Alice*\!`, sent[0].Text)
	require.Equal(t, "Hello Alice!", sent[0].Plain)
	require.Equal(t, "MarkdownV2", sent[0].ParseMode)
	require.Equal(t, in.Message.ID, sent[0].ReplyToMessageID)
	require.False(t, sent[0].At.IsZero())
	require.Equal(t, sent, tb.srv.AllSent())
	require.Equal(t, sent, tb.srv.WaitSent(t, tb.alice.ID, 1, wait))
}

func TestSendMessageAcceptsJSONBodies(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddChat(77)

	req, err := http.NewRequest(http.MethodPost, tb.srv.URL()+"/bot"+tb.srv.Token()+"/sendMessage",
		strings.NewReader(`{"chat_id":77,"text":"json client"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := tb.client.Do(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())

	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "json client", tb.srv.WaitSent(t, 77, 1, wait)[0].Text)
}

func TestSendMessageValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	send := func(chatID int64, text string) error {
		_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: chatID, Text: text})
		return err
	}

	err := send(tb.alice.ID, strings.Repeat("a", 4097))
	require.ErrorIs(t, err, bot.ErrorBadRequest)
	require.ErrorContains(t, err, "message is too long")
	require.NoError(t, send(tb.alice.ID, strings.Repeat("a", 4096)))
	// Telegram counts UTF-16 code units: each of these emoji is two.
	require.NoError(t, send(tb.alice.ID, strings.Repeat("😀", 2048)))
	require.ErrorContains(t, send(tb.alice.ID, strings.Repeat("😀", 2049)), "message is too long")

	require.ErrorContains(t, send(tb.alice.ID, " "), "message text is empty")
	require.ErrorContains(t, send(31337, "anyone?"), "chat not found")

	require.Len(t, tb.srv.Sent(tb.alice.ID), 2)
	require.Empty(t, tb.srv.Sent(31337))
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	send := func(text string) error {
		_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: tb.alice.ID, Text: text})
		return err
	}

	tb.srv.FailNext("sendMessage", telegramtest.TooManyRequests(7))
	tb.srv.FailNext("sendMessage", telegramtest.MessageTooLong())
	err := send("one")
	var tooMany *bot.TooManyRequestsError
	require.ErrorAs(t, err, &tooMany)
	require.Equal(t, 7, tooMany.RetryAfter)
	require.ErrorContains(t, send("two"), "message is too long")
	require.NoError(t, send("three"))

	tb.srv.FailAfter("sendMessage", 2, telegramtest.ServerError())
	require.NoError(t, send("four"))
	require.NoError(t, send("five"))
	require.ErrorContains(t, send("six"), "500 Internal Server Error")
	require.NoError(t, send("seven"))

	tb.srv.FailNext("sendMessage", telegramtest.BotBlocked())
	require.ErrorIs(t, send("eight"), bot.ErrorForbidden)

	var texts []string
	for _, m := range tb.srv.Sent(tb.alice.ID) {
		texts = append(texts, m.Text)
	}
	require.Equal(t, []string{"three", "four", "five", "seven"}, texts)
	require.Equal(t, 8, tb.srv.Calls("sendMessage"))
}

func TestBlock(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()
	_, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: tb.alice.ID, Action: models.ChatActionTyping})
	require.NoError(t, err)

	tb.srv.Block(tb.alice.ID)

	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "still there?"})
	require.ErrorIs(t, err, bot.ErrorForbidden)
	require.ErrorContains(t, err, "bot was blocked by the user")
	_, err = b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: tb.alice.ID, Action: models.ChatActionTyping})
	require.ErrorIs(t, err, bot.ErrorForbidden)
	require.Empty(t, tb.srv.Sent(tb.alice.ID))
	require.Equal(t, []string{"typing"}, tb.srv.ChatActions(tb.alice.ID))
}

func TestChatActions(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()

	for range 2 {
		ok, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: tb.alice.ID, Action: models.ChatActionTyping})
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err := b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: tb.alice.ID, Action: "dancing"})
	require.ErrorIs(t, err, bot.ErrorBadRequest)
	_, err = b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: 5, Action: models.ChatActionTyping})
	require.ErrorContains(t, err, "chat not found")

	require.Equal(t, []string{"typing", "typing"}, tb.srv.ChatActions(tb.alice.ID))
}

func TestInjectRaw(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	malformed := `{"update_id": 1, "message": {"text": "unterminated`
	tb.srv.InjectRaw(json.RawMessage(malformed))

	_, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "getUpdates", nil)
	require.Equal(t, `{"ok":true,"result":[`+malformed+`]}`, string(body))
	r := tb.getUpdates(t, nil)
	require.JSONEq(t, `[]`, string(r.Result), "an update no client can confirm is delivered once")

	tb.srv.InjectRaw(json.RawMessage(`{"update_id":500,"brand_new_kind":{"x":1}}`))
	next := tb.srv.SendPrivate(tb.alice, "after")
	require.Equal(t, int64(501), next.ID)
	r = tb.getUpdates(t, nil)
	var got []json.RawMessage
	require.NoError(t, json.Unmarshal(r.Result, &got))
	require.Len(t, got, 2)
	require.JSONEq(t, `{"update_id":500,"brand_new_kind":{"x":1}}`, string(got[0]))
}

func TestInjectRawMakesChatsKnown(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.InjectRaw(json.RawMessage(`{"update_id":9,"message":{"message_id":1,"date":0,"chat":{"id":555,"type":"private"},"text":"hey"}}`))

	_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: 555, Text: "hello"})
	require.NoError(t, err)
}

func TestMarkdownV2(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")

	cases := []struct {
		text    string
		plain   string // "" when Telegram rejects it
		problem string
	}{
		{text: `Price: 5.00`, problem: `can't parse entities: Character '.' is reserved and must be escaped with the preceding '\'`},
		{text: `Price: 5\.00`, plain: "Price: 5.00"},
		{text: `well\-known \(really\)\!`, plain: "well-known (really)!"},
		{text: `*bold* _italic_ __under__ ~gone~ ||secret||`, plain: "bold italic under gone secret"},
		{text: "`a.b-c` and ```go\nfmt.Println(1)\n```", plain: "a.b-c and fmt.Println(1)\n"},
		{text: `[the docs](https://example.com/a_b?x=1)`, plain: "the docs"},
		{text: ">quoted line\nnext", plain: "quoted line\nnext"},
		{text: `*never closed`, problem: "Can't find end of Bold entity at byte offset 0"},
		{text: `a|b`, problem: `Character '|' is reserved`},
		{text: `1 + 1 = 2`, problem: `Character '+' is reserved`},
		{text: `look! here`, problem: `Character '!' is reserved`},
		{text: `C:\path`, plain: `C:path`},
	}
	for _, c := range cases {
		_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: tb.alice.ID, Text: c.text, ParseMode: models.ParseModeMarkdown})
		if c.problem != "" {
			require.ErrorIs(t, err, bot.ErrorBadRequest, c.text)
			require.ErrorContains(t, err, c.problem, c.text)
			continue
		}
		require.NoError(t, err, c.text)
		sent := tb.srv.AllSent()
		require.Equal(t, c.plain, sent[len(sent)-1].Plain, c.text)
	}
}

func TestMalformedMarkdownV2GetsTelegramsError(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")

	_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: tb.alice.ID,
		Text: `Sure\! *never closed`, ParseMode: models.ParseModeMarkdown})

	require.ErrorIs(t, err, bot.ErrorBadRequest)
	require.EqualError(t, err, "bad request, Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 7",
		"Telegram's own words, with the byte offset where the entity opened")
	require.Len(t, tb.srv.Sent(tb.alice.ID), 0)
}

func TestRefuseNextMarkup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	tb.srv.SendPrivate(tb.alice, "hi")
	ctx := context.Background()
	send := func(text string, mode models.ParseMode) error {
		_, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: tb.alice.ID, Text: text, ParseMode: mode})
		return err
	}

	tb.srv.RefuseNextMarkup()
	require.NoError(t, send("plain text is never refused", ""))
	err := send(`fine \- *bold*`, models.ParseModeMarkdown)
	require.ErrorIs(t, err, bot.ErrorBadRequest)
	require.ErrorContains(t, err, "Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 8")
	require.NoError(t, send(`fine \- *bold*`, models.ParseModeMarkdown), "one refusal only")

	tb.srv.RefuseMarkupAfter(1)
	require.NoError(t, send("_first_", models.ParseModeMarkdown))
	require.NoError(t, send("not counted", ""))
	err = send("_second_", models.ParseModeMarkdown)
	require.ErrorContains(t, err, "can't parse entities: Can't find end of Italic entity at byte offset 0")

	_, err = b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: &models.InputFileString{Data: "https://example.com/a.png"},
		Caption: "*cat*", ParseMode: models.ParseModeMarkdown})
	require.NoError(t, err, "the queue is empty")
	tb.srv.RefuseNextMarkup()
	_, err = b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: tb.alice.ID, Photo: &models.InputFileString{Data: "https://example.com/a.png"},
		Caption: "*cat*", ParseMode: models.ParseModeMarkdown})
	require.ErrorContains(t, err, "can't parse entities", "captions are refused too")

	var plain []string
	for _, m := range tb.srv.Sent(tb.alice.ID) {
		plain = append(plain, m.Plain)
	}
	require.Equal(t, []string{"plain text is never refused", "fine - bold", "first", "not counted", "cat"}, plain)
}

func TestWebhook(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	b, _ := tb.newBot(t)
	type delivery struct {
		secret string
		update models.Update
	}
	deliveries := make(chan delivery, 16)
	failFirst := make(chan struct{}, 1)
	failFirst <- struct{}{}
	receiver := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		var u models.Update
		if err := json.NewDecoder(r.Body).Decode(&u); err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		select {
		case <-failFirst:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		default:
		}
		deliveries <- delivery{secret: r.Header.Get("X-Telegram-Bot-Api-Secret-Token"), update: u}
	})
	ctx := context.Background()

	queued := tb.srv.SendPrivate(tb.alice, "sent before the webhook")
	ok, err := b.SetWebhook(ctx, &bot.SetWebhookParams{URL: receiver + "/hook", SecretToken: "s3cret_token"})
	require.NoError(t, err)
	require.True(t, ok)
	gotURL, gotSecret := tb.srv.Webhook()
	require.Equal(t, receiver+"/hook", gotURL)
	require.Equal(t, "s3cret_token", gotSecret)

	live := tb.srv.SendPrivate(tb.alice, "via webhook")
	for _, want := range []models.Update{queued, live} {
		select {
		case d := <-deliveries:
			require.Equal(t, "s3cret_token", d.secret)
			require.Equal(t, want, d.update, "in order, the first one after a retry")
		case <-time.After(wait):
			t.Fatalf("update %d was not delivered", want.ID)
		}
	}

	status, body := tb.rawCall(ctx, t, tb.srv.Token(), "getUpdates", nil)
	require.Equal(t, http.StatusConflict, status)
	require.JSONEq(t, `{"ok":false,"error_code":409,"description":"Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}`, string(body))
	info, err := b.GetWebhookInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, receiver+"/hook", info.URL)

	ok, err = b.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
	require.NoError(t, err)
	require.True(t, ok)
	gotURL, _ = tb.srv.Webhook()
	require.Empty(t, gotURL)
	after := tb.srv.SendPrivate(tb.alice, "polling again")
	r := tb.getUpdates(t, nil)
	var got []models.Update
	require.NoError(t, json.Unmarshal(r.Result, &got))
	require.Equal(t, []models.Update{after}, got)
}

func TestSetWebhookReleasesHeldPoll(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	result := make(chan apiResponse, 1)
	go func() {
		_, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "getUpdates", url.Values{"timeout": {"30"}})
		var r apiResponse
		_ = json.Unmarshal(body, &r)
		result <- r
	}()
	tb.srv.WaitCalls(t, "getUpdates", 1, wait)

	status, _ := tb.rawCall(context.Background(), t, tb.srv.Token(), "setWebhook", url.Values{"url": {"http://127.0.0.1:1/hook"}, "drop_pending_updates": {"true"}})
	require.Equal(t, http.StatusOK, status)

	select {
	case r := <-result:
		require.Equal(t, http.StatusConflict, r.ErrorCode)
	case <-time.After(wait):
		t.Fatal("held poll not answered after setWebhook")
	}
}

func TestCleanupReleasesHeldPoll(t *testing.T) {
	t.Parallel()
	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	answered := make(chan error, 1)

	began := time.Now()
	t.Run("server", func(t *testing.T) {
		srv := telegramtest.NewServer(t)
		go func() {
			resp, err := client.PostForm(srv.URL()+"/bot"+srv.Token()+"/getUpdates", url.Values{"timeout": {"50"}})
			if err == nil {
				err = resp.Body.Close()
			}
			answered <- err
		}()
		srv.WaitCalls(t, "getUpdates", 1, wait)
	}) // the server's Cleanup runs here

	select {
	case <-answered:
		require.Less(t, time.Since(began), wait)
	case <-time.After(wait):
		t.Fatal("held long poll not released by Cleanup")
	}
}

// newReceiver serves h on a test server and returns its URL.
func newReceiver(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestWithNowAndUnblock(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	tb := setup(t, telegramtest.WithNow(func() time.Time { return at }))
	b, _ := tb.newBot(t)
	in := tb.srv.SendPrivate(tb.alice, "hi")
	tb.srv.Block(tb.alice.ID)
	tb.srv.Unblock(tb.alice.ID)

	msg, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: tb.alice.ID, Text: "back"})
	require.NoError(t, err)

	require.Equal(t, int(at.Unix()), in.Message.Date)
	require.Equal(t, int(at.Unix()), msg.Date)
	require.Equal(t, at, tb.srv.Sent(tb.alice.ID)[0].At)
}

// TestReadmeExample is the README's example, kept compiling and passing.
func TestReadmeExample(t *testing.T) {
	t.Parallel()
	srv := telegramtest.NewServer(t)
	alice := telegramtest.User{ID: 1001, FirstName: "Alice"}

	b, err := bot.New(srv.Token(),
		bot.WithServerURL(srv.URL()),
		bot.WithNotAsyncHandlers(),
		bot.WithDefaultHandler(func(ctx context.Context, b *bot.Bot, u *models.Update) {
			_, _ = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: u.Message.Chat.ID, Text: "you said: " + u.Message.Text})
		}))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); b.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-stopped })

	srv.SendPrivate(alice, "hi")

	sent := srv.WaitSent(t, alice.ID, 1, 5*time.Second)
	require.Equal(t, "you said: hi", sent[0].Text)
}
