package telegram

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
)

// ids returns the message ids of sent messages as SendResult has them.
func ids(sent []telegramtest.SentMessage) []string {
	out := make([]string, len(sent))
	for i, m := range sent {
		out[i] = strconv.Itoa(m.MessageID)
	}
	return out
}

func TestReplyReachesTheChat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)

	res, err := b.send(ada.ID, "Hello, Ada! 👋")
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1)
	require.Equal(t, "Hello, Ada! 👋", sent[0].Text)
	require.Empty(t, sent[0].ParseMode, "plain text has no parse mode")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestLongReplyArrivesInParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	var text strings.Builder
	for i := 0; text.Len() < 5000; i++ {
		text.WriteString("word" + strconv.Itoa(i) + " ")
	}
	long := text.String()[:5000]

	res, err := b.send(ada.ID, long)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 2)
	var joined strings.Builder
	for i, m := range sent {
		require.LessOrEqual(t, len(utf16.Encode([]rune(m.Text))), 4096, "part %d", i+1)
		joined.WriteString(m.Text)
	}
	require.Equal(t, long, joined.String(), "in order, nothing lost")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestEmojiHeavyReplyFitsUTF16Limit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	text := strings.Repeat("🙂🙂🙂🙂 ", 900) // 4500 runes, 8100 UTF-16 units

	res, err := b.send(ada.ID, text)
	require.NoError(t, err, "the fake rejects a part over 4096 UTF-16 units")

	sent := b.srv.Sent(ada.ID)
	require.GreaterOrEqual(t, len(sent), 2)
	var joined strings.Builder
	for _, m := range sent {
		joined.WriteString(m.Text)
	}
	require.Equal(t, text, joined.String())
	require.Len(t, res.PlatformMessageIDs, len(sent))
}

func TestTextIsSentAsWrittenWhateverTheFormat(t *testing.T) {
	t.Parallel()
	for _, format := range []string{FormatMarkdown, FormatMarkdownV2, FormatPlain} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(a *Adapter) { a.Format = format })
			b.greet(t, ada)
			text := "Prices: 1.5 + 2 = 3.5! *not bold* _nor italic_ [no](link) `x` ~s~ ||sp|| #tag {a} > q a\\b C:\\dir\\_x"

			_, err := b.send(ada.ID, text)
			require.NoError(t, err)

			sent := b.srv.Sent(ada.ID)
			require.Len(t, sent, 1)
			require.Empty(t, sent[0].ParseMode, "text that is not the model's has no parse mode")
			require.Equal(t, text, sent[0].Plain, "the user reads exactly the text")
			require.Empty(t, sent[0].Entities)
		})
	}
}

func TestRateLimitIsHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendMessage", telegramtest.TooManyRequests(1))

	began := time.Now()
	res, err := b.send(ada.ID, "after the flood wait")
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1, "delivered exactly once")
	require.Equal(t, "after the flood wait", sent[0].Text)
	require.GreaterOrEqual(t, sent[0].At.Sub(began), time.Second, "not before retry_after")
	require.Equal(t, 2, b.srv.Calls("sendMessage"))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRateLimitOnLaterPartDoesNotResendEarlierParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	text := strings.Repeat("a", 3000) + "\n\n" + strings.Repeat("b", 3000)
	b.srv.FailAfter("sendMessage", 1, telegramtest.TooManyRequests(1))

	began := time.Now()
	res, err := b.send(ada.ID, text)
	require.NoError(t, err)

	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 2, "each part exactly once")
	require.Equal(t, strings.Repeat("a", 3000)+"\n\n", sent[0].Text)
	require.Equal(t, strings.Repeat("b", 3000), sent[1].Text)
	require.Less(t, sent[0].At.Sub(began), time.Second, "the first part did not wait")
	require.GreaterOrEqual(t, sent[1].At.Sub(began), time.Second, "the second part waited")
	require.Equal(t, 3, b.srv.Calls("sendMessage"))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRateLimitWaitsExactlyOnTheClock(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC))
	b := newBundle(t)
	b.adapter.clock = clock
	b.start(t)
	b.greet(t, ada)
	b.srv.FailNext("sendMessage", telegramtest.TooManyRequests(7))

	type result struct {
		res core.SendResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := b.send(ada.ID, "patience")
		done <- result{res, err}
	}()
	clock.WaitForTimer(t, clock.Now().Add(7*time.Second), waitFor)
	clock.Advance(7*time.Second - time.Millisecond)
	require.Empty(t, b.srv.Sent(ada.ID), "sent before retry_after passed")
	clock.Advance(time.Millisecond)

	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Len(t, r.res.PlatformMessageIDs, 1)
	case <-time.After(waitFor):
		require.FailNow(t, "Send did not return after the wait")
	}
	require.Len(t, b.srv.Sent(ada.ID), 1)
}

func TestRateLimitGivesUpAfterRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.maxRateLimitRetries = 2 })
	b.greet(t, ada)
	text := strings.Repeat("a", 3000) + "\n\n" + strings.Repeat("b", 3000)
	b.srv.FailAfter("sendMessage", 1, telegramtest.TooManyRequests(1))
	b.srv.FailNext("sendMessage", telegramtest.TooManyRequests(1))
	b.srv.FailNext("sendMessage", telegramtest.TooManyRequests(1))

	res, err := b.send(ada.ID, text)
	require.ErrorContains(t, err, "part 2 of 2: sending telegram message: still rate limited after 2 retries")
	require.False(t, core.IsPermanent(err), "the core may try again later")
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1)
	require.Equal(t, ids(sent), res.PlatformMessageIDs, "the delivered part is reported")
}

func TestServerErrorIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendMessage", telegramtest.ServerError())
	b.srv.FailNext("sendMessage", telegramtest.ServerError())

	_, err := b.send(ada.ID, "eventually")
	require.NoError(t, err)
	require.Len(t, b.srv.Sent(ada.ID), 1)
	require.Equal(t, 3, b.srv.Calls("sendMessage"))

	for range 4 {
		b.srv.FailNext("sendMessage", telegramtest.ServerError())
	}
	_, err = b.send(ada.ID, "never")
	require.ErrorContains(t, err, "sending telegram message: failed after 3 retries")
	require.False(t, core.IsPermanent(err))
	require.NotContains(t, err.Error(), b.srv.Token())
}

func TestBlockedUserIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.Block(ada.ID)

	_, err := b.send(ada.ID, "are you there?")
	require.Contains(t, permanentReason(t, err), "blocked the bot")
	require.Equal(t, 1, b.srv.Calls("sendMessage"), "not retried")

	err = b.adapter.Typing(context.Background(), strconv.FormatInt(ada.ID, 10))
	require.True(t, core.IsPermanent(err), "typing to a blocked user: %v", err)
}

func TestUnknownChatIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.send(555555, "hello stranger")
	require.Contains(t, permanentReason(t, err), "chat not found: Telegram only delivers to users who have started a chat with the bot")
	require.Equal(t, 1, b.srv.Calls("sendMessage"), "not retried")
}

func TestBadThreadIDIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.adapter.Send(context.Background(), core.OutboundMessage{ChannelThreadID: "web-client-1", Text: "hi"})
	require.Equal(t, `channel thread id "web-client-1" is not a telegram chat id`, permanentReason(t, err))
	_, err = b.send(ada.ID, " \n ")
	require.Equal(t, "empty text", permanentReason(t, err))
	require.Zero(t, b.srv.Calls("sendMessage"))
}

func TestLaterPartFailingPermanentlyReportsDeliveredParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailAfter("sendMessage", 1, telegramtest.BotBlocked())

	res, err := b.send(ada.ID, strings.Repeat("a", 3000)+"\n\n"+strings.Repeat("b", 3000))
	require.True(t, core.IsPermanent(err), "got %v", err)
	require.ErrorContains(t, err, "part 2 of 2")
	sent := b.srv.Sent(ada.ID)
	require.Len(t, sent, 1)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestMessageTooLongIsPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	b.srv.FailNext("sendMessage", telegramtest.MessageTooLong())
	_, err := b.send(ada.ID, "short, but the fake says otherwise")
	require.Equal(t, "message is too long for Telegram", permanentReason(t, err))
}

func TestTyping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)
	require.NoError(t, b.adapter.Typing(context.Background(), strconv.FormatInt(ada.ID, 10)))
	require.Equal(t, []string{"typing"}, b.srv.ChatActions(ada.ID))
	require.Empty(t, b.srv.Sent(ada.ID))
}

func TestSendBeforeStart(t *testing.T) {
	t.Parallel()
	b := newBundle(t)
	_, err := b.send(ada.ID, "too early")
	require.EqualError(t, err, "sending telegram message: telegram adapter is not started")
	require.False(t, core.IsPermanent(err))
}

func TestSendErrorsAreExplained(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.greet(t, ada)

	b.srv.FailNext("sendMessage", telegramtest.Fault{Code: 400, Description: "Bad Request: can't parse entities: oops"})
	_, err := b.send(ada.ID, "x")
	require.Equal(t, "telegram rejected the request", permanentReason(t, err))
	require.ErrorContains(t, err, "can't parse entities: oops")

	b.srv.FailNext("sendMessage", telegramtest.Fault{Code: 401, Description: "Unauthorized"})
	_, err = b.send(ada.ID, "x")
	require.EqualError(t, err, "sending telegram message: unauthorized (is the token revoked?)")
	require.False(t, core.IsPermanent(err), "a token can be fixed; the message can wait")

	b.srv.FailNext("sendMessage", telegramtest.Fault{Code: 409, Description: "Conflict: odd"})
	_, err = b.send(ada.ID, "x")
	require.ErrorContains(t, err, "sending telegram message: conflict")
	require.False(t, core.IsPermanent(err))
}

func TestPollBackoff(t *testing.T) {
	t.Parallel()
	a := New()
	require.Equal(t, 100*time.Millisecond, a.nextPollBackoff(0, errPlain))
	require.Equal(t, 200*time.Millisecond, a.nextPollBackoff(100*time.Millisecond, errPlain))
	require.Equal(t, 5*time.Second, a.nextPollBackoff(4*time.Second, errPlain))
	require.Equal(t, 12*time.Second, a.nextPollBackoff(0, &apiError{method: "getUpdates", code: 429, retryAfter: 12}),
		"a 429 on getUpdates waits as long as Telegram asks")
}

var errPlain = &apiError{method: "getUpdates", code: 502, desc: "Bad Gateway"}
