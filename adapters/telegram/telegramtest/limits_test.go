package telegramtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
)

// manualNow is a clock for WithNow that moves when told.
type manualNow struct {
	mu sync.Mutex
	at time.Time
}

func (c *manualNow) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *manualNow) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// limitedSetup is a fake with limits on a manual clock and chats 1-9 known.
func limitedSetup(t *testing.T, l telegramtest.RateLimits) (*testBundle, *manualNow) {
	t.Helper()
	clock := &manualNow{at: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	tb := setup(t, telegramtest.WithNow(clock.now), telegramtest.WithRateLimits(l))
	for id := int64(1); id <= 9; id++ {
		tb.srv.AddChat(id)
	}
	return tb, clock
}

// sendTo makes a raw sendMessage call and returns its status and
// retry_after.
func (tb *testBundle) sendTo(t *testing.T, chat int64) (int, int) {
	t.Helper()
	status, body := tb.rawCall(context.Background(), t, tb.srv.Token(), "sendMessage",
		url.Values{"chat_id": {strconv.FormatInt(chat, 10)}, "text": {"hi"}})
	var r apiResponse
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	if status == http.StatusTooManyRequests {
		require.Equal(t, "Too Many Requests: retry after "+strconv.Itoa(r.Parameters.RetryAfter), r.Description)
	}
	return status, r.Parameters.RetryAfter
}

func TestBotWideLimitIsASlidingWindow(t *testing.T) {
	t.Parallel()
	tb, clock := limitedSetup(t, telegramtest.RateLimits{PerSecond: 3})
	ok := func(chat int64) {
		t.Helper()
		status, _ := tb.sendTo(t, chat)
		require.Equal(t, http.StatusOK, status)
	}
	limited := func(chat int64, retryAfter int) {
		t.Helper()
		status, after := tb.sendTo(t, chat)
		require.Equal(t, http.StatusTooManyRequests, status)
		require.Equal(t, retryAfter, after)
	}
	ok(1)
	clock.advance(400 * time.Millisecond)
	ok(2)
	ok(3)
	limited(4, 1)
	// Refused calls count for nothing: at 1 s the first call leaves the
	// window (a call at t counts the ones in (t-1s, t]) and one more goes.
	clock.advance(599 * time.Millisecond)
	limited(4, 1)
	clock.advance(time.Millisecond)
	ok(4)
	limited(5, 1)
	// Calls other than the message-creating ones are not limited.
	_, err := tb.newBotClient(t).SendChatAction(context.Background(), &bot.SendChatActionParams{ChatID: 1, Action: "typing"})
	require.NoError(t, err)
	clock.advance(400 * time.Millisecond)
	ok(5)
	ok(6)
	require.Equal(t, telegramtest.SendStats{Attempts: 9, RateLimited: 3}, tb.srv.SendStats())
	require.Len(t, tb.srv.AllSent(), 6)
}

func TestPerChatLimitIsATokenBucket(t *testing.T) {
	t.Parallel()
	tb, clock := limitedSetup(t, telegramtest.TelegramRateLimits())
	for range 3 {
		status, _ := tb.sendTo(t, 1)
		require.Equal(t, http.StatusOK, status, "a burst of three")
	}
	status, after := tb.sendTo(t, 1)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, 1, after)
	status, _ = tb.sendTo(t, 2)
	require.Equal(t, http.StatusOK, status, "another chat has its own bucket")
	clock.advance(999 * time.Millisecond)
	status, _ = tb.sendTo(t, 1)
	require.Equal(t, http.StatusTooManyRequests, status)
	clock.advance(time.Millisecond)
	status, _ = tb.sendTo(t, 1)
	require.Equal(t, http.StatusOK, status, "one a second after the burst")
	clock.advance(2500 * time.Millisecond)
	for range 2 {
		status, _ = tb.sendTo(t, 1)
		require.Equal(t, http.StatusOK, status, "2.5 tokens earned")
	}
	status, _ = tb.sendTo(t, 1)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, telegramtest.SendStats{Attempts: 10, RateLimited: 3}, tb.srv.SendStats())
}

func TestRateLimitedSendIsReadByTheClient(t *testing.T) {
	t.Parallel()
	tb, _ := limitedSetup(t, telegramtest.RateLimits{PerChatPerSecond: 0.25})
	b := tb.newBotClient(t)
	send := func() error {
		_, err := b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: 1, Text: "hi"})
		return err
	}
	require.NoError(t, send())
	var tooMany *bot.TooManyRequestsError
	require.ErrorAs(t, send(), &tooMany)
	require.Equal(t, 4, tooMany.RetryAfter, "a token every 4 s")

	// Lifted, the limits let everything through.
	tb.srv.SetRateLimits(telegramtest.RateLimits{})
	require.NoError(t, send())
	require.Equal(t, telegramtest.SendStats{Attempts: 3, RateLimited: 1}, tb.srv.SendStats())
}

func TestLatencyDelaysEveryCall(t *testing.T) {
	t.Parallel()
	const rtt = 150 * time.Millisecond
	tb := setup(t, telegramtest.WithLatency(rtt))
	tb.srv.AddChat(1)
	b := tb.newBotClient(t)
	began := time.Now()
	_, err := b.GetMe(context.Background())
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(began), rtt)

	began = time.Now()
	_, err = b.SendMessage(context.Background(), &bot.SendMessageParams{ChatID: 1, Text: "hi"})
	require.NoError(t, err)
	took := time.Since(began)
	require.GreaterOrEqual(t, took, rtt)
	sent := tb.srv.Sent(1)
	require.Len(t, sent, 1)
	// Recorded half way: the request's trip there.
	require.GreaterOrEqual(t, sent[0].At.Sub(began), rtt/2)

	tb.srv.SetLatency(0)
	_, err = b.GetMe(context.Background())
	require.NoError(t, err)

	// A client that gives up during the trip gets nothing, and nothing is
	// sent.
	tb.srv.SetLatency(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = b.SendMessage(ctx, &bot.SendMessageParams{ChatID: 1, Text: "lost"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, tb.srv.Sent(1), 1)
}

// newBotClient is a go-telegram/bot client of the fake that polls nothing.
func (tb *testBundle) newBotClient(t *testing.T) *bot.Bot {
	t.Helper()
	b, err := bot.New(tb.srv.Token(), bot.WithServerURL(tb.srv.URL()), bot.WithSkipGetMe(),
		bot.WithErrorsHandler(func(error) {}))
	require.NoError(t, err)
	return b
}
