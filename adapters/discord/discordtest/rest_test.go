package discordtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
)

// restClient is a discordgo session used for REST only (never opened).
func (tb *testBundle) restClient(t *testing.T) *client {
	t.Helper()
	return tb.newClient(t, discordgo.IntentsDirectMessages)
}

func TestUsersMe(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithBotUser("4242", "other-bot"))
	c := tb.restClient(t)

	me, err := c.dg.User("@me")
	require.NoError(t, err)
	require.Equal(t, "4242", me.ID)
	require.Equal(t, "other-bot", me.Username)
	require.True(t, me.Bot)
	require.Equal(t, 1, tb.srv.Calls("users.me"))
}

func TestWrongTokenIsUnauthorized(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithToken("right.token"))
	dg, err := discordgo.New("Bot wrong.token")
	require.NoError(t, err)
	dg.Client = tb.srv.HTTPClient()

	_, err = dg.User("@me")
	re := requireRESTError(t, err, http.StatusUnauthorized, 0)
	require.Equal(t, "401: Unauthorized", re.Message.Message)
	require.NotContains(t, err.Error(), "wrong.token")
	require.Equal(t, 1, tb.srv.Calls("users.me"))
}

func TestGatewayBot(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)

	gb, err := c.dg.GatewayBot()
	require.NoError(t, err)
	require.Equal(t, tb.srv.GatewayURL()+"/", gb.URL, "discordgo appends a slash")
	require.Equal(t, 1, gb.Shards)
	require.Equal(t, 1000, gb.SessionStartLimit.Total)
	require.Equal(t, 999, gb.SessionStartLimit.Remaining)
}

// Each IDENTIFY takes one of the session starts GET /gateway/bot reports.
func TestGatewayBotSessionStartLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithSessionStartLimit(1000, 2))
	tb.open(t)
	gb, err := tb.restClient(t).dg.GatewayBot()
	require.NoError(t, err)
	require.Equal(t, 1000, gb.SessionStartLimit.Total)
	require.Equal(t, 1, gb.SessionStartLimit.Remaining)
}

func TestUnknownRouteIsNotFound(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)

	_, err := c.dg.Guild("123")
	requireRESTError(t, err, http.StatusNotFound, 0)
	require.Equal(t, 1, tb.srv.Calls("unknown"))
}

func TestUserChannelCreateReturnsTheSameChannel(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	tb.srv.AddUser(tb.alice)

	ch1, err := c.dg.UserChannelCreate(tb.alice.ID)
	require.NoError(t, err)
	ch2, err := c.dg.UserChannelCreate(tb.alice.ID)
	require.NoError(t, err)

	require.Equal(t, ch1.ID, ch2.ID)
	require.Equal(t, discordgo.ChannelTypeDM, ch1.Type)
	require.Len(t, ch1.Recipients, 1)
	require.Equal(t, tb.alice.ID, ch1.Recipients[0].ID)
	require.Equal(t, ch1.ID, tb.srv.DMChannelOf(tb.alice.ID))
	require.Equal(t, 2, tb.srv.Calls("users.channels"))

	// The user's DMs arrive in that channel.
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	require.Equal(t, ch1.ID, chID)

	_, err = c.dg.UserChannelCreate("not-a-snowflake")
	requireRESTError(t, err, http.StatusBadRequest, 50035)
	_, err = c.dg.UserChannelCreate(tb.bob.ID)
	requireRESTError(t, err, http.StatusNotFound, 10013)
	require.Empty(t, tb.srv.DMChannelOf(tb.bob.ID), "no DM with an unknown user")
}

func TestSendComplexIsRecorded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, inID := tb.srv.SendDM(tb.alice, "question")

	m, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{
		Content:   "answer",
		Reference: &discordgo.MessageReference{MessageID: inID},
	})
	require.NoError(t, err)
	require.Equal(t, "answer", m.Content)
	require.Equal(t, chID, m.ChannelID)
	require.Equal(t, tb.srv.BotID(), m.Author.ID)
	require.Greater(t, m.ID, inID)

	sent := tb.srv.WaitSent(t, chID, 1, wait)
	require.Len(t, sent, 1)
	require.Equal(t, discordtest.SentMessage{
		ChannelID: chID, MessageID: m.ID, Content: "answer", ReplyTo: inID, At: sent[0].At,
	}, sent[0])
	require.Equal(t, sent, tb.srv.AllSent())
	require.Equal(t, 1, tb.srv.Calls("messages"))
}

func TestSendWithFilesUsesPayloadJSON(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "send me a file")

	_, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{
		Content: "here it is",
		Files:   []*discordgo.File{{Name: "a.txt", Reader: strings.NewReader("data")}},
	})
	require.NoError(t, err)
	require.Equal(t, "here it is", tb.srv.Sent(chID)[0].Content)
}

func TestNonceIsRecordedAndEnforcedNonceDeduplicates(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	first, err := sendWithNonce(c, chID, nonceSend{Content: "once", Nonce: "n-1", EnforceNonce: true})
	require.NoError(t, err)
	again, err := sendWithNonce(c, chID, nonceSend{Content: "once", Nonce: "n-1", EnforceNonce: true})
	require.NoError(t, err)

	require.Equal(t, first.ID, again.ID)
	sent := tb.srv.Sent(chID)
	require.Len(t, sent, 1)
	require.Equal(t, "n-1", sent[0].Nonce)
	require.True(t, sent[0].EnforceNonce)
	require.Equal(t, 2, tb.srv.Calls("messages"))

	// Without enforce_nonce Discord creates a second message.
	_, err = sendWithNonce(c, chID, nonceSend{Content: "twice", Nonce: "n-2"})
	require.NoError(t, err)
	_, err = sendWithNonce(c, chID, nonceSend{Content: "twice", Nonce: "n-2"})
	require.NoError(t, err)
	require.Len(t, tb.srv.Sent(chID), 3)

	_, err = sendWithNonce(c, chID, nonceSend{Content: "x", Nonce: strings.Repeat("n", 26)})
	requireRESTError(t, err, http.StatusBadRequest, 50035)
}

func TestMessageValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	// 2000 code points is the limit, whatever their UTF-8 length.
	_, err := c.dg.ChannelMessageSend(chID, strings.Repeat("ж", 2000))
	require.NoError(t, err)
	_, err = c.dg.ChannelMessageSend(chID, strings.Repeat("ж", 2001))
	re := requireRESTError(t, err, http.StatusBadRequest, 50035)
	require.Equal(t, "Invalid Form Body", re.Message.Message)

	_, err = c.dg.ChannelMessageSend(chID, "")
	requireRESTError(t, err, http.StatusBadRequest, 50006)

	_, err = c.dg.ChannelMessageSend("123456", "anyone?")
	requireRESTError(t, err, http.StatusNotFound, 10003)

	require.Len(t, tb.srv.Sent(chID), 1)
}

func TestRefuseNextMarkup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	tb.srv.RefuseNextMarkup()
	_, err := c.dg.ChannelMessageSendEmbed(chID, &discordgo.MessageEmbed{Description: "an embed alone passes"})
	require.NoError(t, err)
	_, err = c.dg.ChannelMessageSend(chID, "**refused**")
	re := requireRESTError(t, err, http.StatusBadRequest, 50035)
	require.Equal(t, "Invalid Form Body", re.Message.Message)
	require.Contains(t, string(re.ResponseBody), `"content":{"_errors":[`, "the errors name the content")
	_, err = c.dg.ChannelMessageSend(chID, "**accepted**")
	require.NoError(t, err, "one refusal only")

	tb.srv.RefuseMarkupAfter(1)
	_, err = c.dg.ChannelMessageSend(chID, "first")
	require.NoError(t, err)
	_, err = c.dg.ChannelMessageSend(chID, "second")
	requireRESTError(t, err, http.StatusBadRequest, 50035)

	var contents []string
	for _, m := range tb.srv.Sent(chID) {
		contents = append(contents, m.Content)
	}
	require.Equal(t, []string{"", "**accepted**", "first"}, contents, "refused messages are not created")
}

func TestBlockedUser(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "bye")

	tb.srv.Block(tb.alice.ID)
	_, err := c.dg.ChannelMessageSend(chID, "wait")
	re := requireRESTError(t, err, http.StatusForbidden, 50007)
	require.Equal(t, "Cannot send messages to this user", re.Message.Message)
	requireRESTError(t, c.dg.ChannelTyping(chID), http.StatusForbidden, 50007)
	require.Empty(t, tb.srv.Sent(chID))
	require.Zero(t, tb.srv.Typing(chID))

	tb.srv.Unblock(tb.alice.ID)
	_, err = c.dg.ChannelMessageSend(chID, "welcome back")
	require.NoError(t, err)
}

func TestTyping(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	require.NoError(t, c.dg.ChannelTyping(chID))
	require.NoError(t, c.dg.ChannelTyping(chID))
	require.Equal(t, 2, tb.srv.Typing(chID))
	require.Equal(t, 2, tb.srv.Calls("typing"))
}

func TestFailNext(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	tb.srv.FailNext("messages", http.StatusInternalServerError, 0, "500: Internal Server Error")
	_, err := c.dg.ChannelMessageSend(chID, "lost")
	requireRESTError(t, err, http.StatusInternalServerError, 0)

	_, err = c.dg.ChannelMessageSend(chID, "fine")
	require.NoError(t, err)
	require.Equal(t, "fine", tb.srv.Sent(chID)[0].Content)
}

func TestRateLimitIsRetriedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	const retryAfter = 300 * time.Millisecond

	tb.srv.RateLimitNext("messages", retryAfter)
	start := time.Now()
	m, err := c.dg.ChannelMessageSend(chID, "patient")
	elapsed := time.Since(start)

	require.NoError(t, err)
	require.GreaterOrEqual(t, elapsed, retryAfter)
	require.Equal(t, 2, tb.srv.Calls("messages"))
	sent := tb.srv.Sent(chID)
	require.Len(t, sent, 1)
	require.Equal(t, m.ID, sent[0].MessageID)
	require.GreaterOrEqual(t, sent[0].At.Sub(start), retryAfter)
}

func TestRateLimitErrorWithoutRetry(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	c.dg.ShouldRetryOnRateLimit = false
	chID, _ := tb.srv.SendDM(tb.alice, "hi")

	tb.srv.RateLimitNext("messages", 1500*time.Millisecond)
	_, err := c.dg.ChannelMessageSend(chID, "now")

	var rl *discordgo.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 1500*time.Millisecond, rl.RetryAfter)
	require.Empty(t, tb.srv.Sent(chID))
}

func TestEchoOwnMessages(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithEchoOwnMessages())
	c := tb.open(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	receive(t, c.creates)

	sent, err := c.dg.ChannelMessageSend(chID, "hello alice")
	require.NoError(t, err)

	echo := receive(t, c.creates)
	require.Equal(t, sent.ID, echo.ID)
	require.Equal(t, tb.srv.BotID(), echo.Author.ID)
}

func TestRateLimitAfterLetsCallsThrough(t *testing.T) {
	t.Parallel()
	srv := discordtest.NewServer(t)
	srv.RateLimitAfter("users.me", 2, time.Second)
	client := srv.HTTPClient()
	get := func() int {
		req, err := http.NewRequest(http.MethodGet, "https://discord.com/api/v9/users/@me", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bot "+srv.Token())
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, get())
	require.Equal(t, http.StatusOK, get())
	require.Equal(t, http.StatusTooManyRequests, get(), "the third call is limited")
	require.Equal(t, http.StatusOK, get())
}

func TestChannelRateLimit(t *testing.T) {
	t.Parallel()
	clock := &testClock{now: time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)}
	tb := setup(t, discordtest.WithNow(clock.Now), discordtest.WithChannelRateLimit(2, time.Second))
	chA, _ := tb.srv.SendDM(tb.alice, "hi")
	chB, _ := tb.srv.SendDM(tb.bob, "hi")
	client := tb.srv.HTTPClient()
	post := func(channelID string) (int, http.Header, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, "https://discord.com/api/v9/channels/"+channelID+"/messages",
			strings.NewReader(`{"content":"tick"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bot "+tb.srv.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, resp.Header, body
	}

	for range 2 {
		status, _, _ := post(chA)
		require.Equal(t, http.StatusOK, status, "the burst passes")
	}
	status, h, body := post(chA)
	require.Equal(t, http.StatusTooManyRequests, status, "the third at once is over the limit")
	require.Equal(t, map[string]any{"message": "You are being rate limited.", "retry_after": 1.0, "global": false}, body)
	require.Equal(t, "1", h.Get("Retry-After"))
	require.Equal(t, "2", h.Get("X-RateLimit-Limit"))
	require.Equal(t, "0", h.Get("X-RateLimit-Remaining"))
	require.Equal(t, "1.000", h.Get("X-RateLimit-Reset-After"))
	require.Equal(t, "user", h.Get("X-RateLimit-Scope"))
	require.NotEmpty(t, h.Get("X-RateLimit-Bucket"))

	status, _, _ = post(chB)
	require.Equal(t, http.StatusOK, status, "each channel has its own limit")

	clock.Advance(500 * time.Millisecond)
	status, _, body = post(chA)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, 0.5, body["retry_after"], "the wait left until one more")
	clock.Advance(500 * time.Millisecond)
	status, _, _ = post(chA)
	require.Equal(t, http.StatusOK, status, "one more a second later, to the instant")
	status, _, _ = post(chA)
	require.Equal(t, http.StatusTooManyRequests, status, "and only one")

	require.Len(t, tb.srv.Sent(chA), 3, "a limited message creates nothing")
	require.Equal(t, 3, tb.srv.RateLimited())
	tb.srv.RateLimitNext("typing", time.Second)
	require.Error(t, tb.restClient(t).dg.ChannelTyping(chB, discordgo.WithRetryOnRatelimit(false)))
	require.Equal(t, 4, tb.srv.RateLimited(), "scheduled rate limits count too")
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
