package slacktest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// requireSlackError asserts err is Slack's {"ok":false} error with code.
func requireSlackError(t *testing.T, err error, code string) {
	t.Helper()
	var se slack.SlackErrorResponse
	require.ErrorAs(t, err, &se)
	require.Equal(t, code, se.Err)
}

func TestAuthTest(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	res, err := tb.api.AuthTest()
	require.NoError(t, err)
	require.Equal(t, "https://fake.slack.com/", res.URL)
	require.Equal(t, "Fake", res.Team)
	require.Equal(t, "parley", res.User)
	require.Equal(t, "T0FAKE0001", res.TeamID)
	require.Equal(t, tb.srv.TeamID(), res.TeamID)
	require.Equal(t, tb.srv.BotUserID(), res.UserID)
	require.Equal(t, tb.srv.BotID(), res.BotID)

	_, err = newAPI(t, tb.srv, "xoxb-wrong").AuthTest()
	requireSlackError(t, err, "invalid_auth")
	require.NotContains(t, err.Error(), "xoxb-wrong")

	_, err = newAPI(t, tb.srv, "").AuthTest()
	requireSlackError(t, err, "not_authed")

	_, err = newAPI(t, tb.srv, tb.srv.AppToken()).AuthTest()
	requireSlackError(t, err, "not_allowed_token_type")

	require.Equal(t, 4, tb.srv.Calls("auth.test"))
}

func TestDefaultsAndOptions(t *testing.T) {
	t.Parallel()
	srv := slacktest.NewServer(t)
	require.True(t, strings.HasPrefix(srv.BotToken(), "xoxb-"), srv.BotToken())
	require.True(t, strings.HasPrefix(srv.AppToken(), "xapp-1-"), srv.AppToken())
	require.NotEmpty(t, srv.SigningSecret())
	require.Equal(t, srv.URL()+"/api/", srv.APIURL())
	require.Equal(t, "A0FAKE0001", srv.AppID())
	require.Equal(t, "U0BOT00001", srv.BotUserID())
	require.Equal(t, "B0BOT00001", srv.BotID())
	require.NotEqual(t, srv.BotToken(), slacktest.NewServer(t).BotToken())

	other := slacktest.NewServer(t,
		slacktest.WithBotToken("xoxb-1-2-abc"),
		slacktest.WithAppToken("xapp-1-A-1-def"),
		slacktest.WithSigningSecret("s3cret"))
	require.Equal(t, "xoxb-1-2-abc", other.BotToken())
	require.Equal(t, "xapp-1-A-1-def", other.AppToken())
	require.Equal(t, "s3cret", other.SigningSecret())
	_, err := newAPI(t, other, "xoxb-1-2-abc").AuthTest()
	require.NoError(t, err)

	other.Close()
	other.Close() // idempotent
}

var tsPattern = regexp.MustCompile(`^\d{10}\.\d{6}$`)

func TestPostMessageIsRecorded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)
	dm, _, _, err := tb.api.OpenConversation(&slack.OpenConversationParameters{Users: []string{tb.alice.ID}})
	require.NoError(t, err)

	ch, ts, err := tb.api.PostMessage(dm.ID, slack.MsgOptionText("1 < 2 & 3 > 2", true))
	require.NoError(t, err)
	require.Equal(t, dm.ID, ch)
	require.Regexp(t, tsPattern, ts)

	sent := tb.srv.WaitSent(t, dm.ID, 1, wait)
	require.Len(t, sent, 1)
	require.Equal(t, "1 &lt; 2 &amp; 3 &gt; 2", sent[0].Text)
	require.Equal(t, "1 < 2 & 3 > 2", slacktest.Unescape(sent[0].Text))
	require.Equal(t, ts, sent[0].TS)
	require.True(t, sent[0].Mrkdwn)
	require.Empty(t, sent[0].ThreadTS)
	require.False(t, sent[0].At.IsZero())

	// A user id goes to the DM with that user.
	ch2, ts2, err := tb.api.PostMessage(tb.alice.ID,
		slack.MsgOptionText("*plain*", false), slack.MsgOptionDisableMarkdown(), slack.MsgOptionTS(ts))
	require.NoError(t, err)
	require.Equal(t, dm.ID, ch2)
	require.Greater(t, ts2, ts)

	sent = tb.srv.Sent(dm.ID)
	require.Len(t, sent, 2)
	require.Equal(t, "*plain*", sent[1].Text)
	require.False(t, sent[1].Mrkdwn)
	require.Equal(t, ts, sent[1].ThreadTS)
	require.Equal(t, sent, tb.srv.AllSent())
	require.Empty(t, tb.srv.Sent("D0NOPE"))
	require.Equal(t, 2, tb.srv.Calls("chat.postMessage"))
}

func TestPostMessageResponse(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)

	status, body := rawCall(t, tb.srv, http.MethodPost, "chat.postMessage", tb.srv.BotToken(),
		"application/json", `{"channel":"`+tb.alice.ID+`","text":"hi","mrkdwn":false}`)
	require.Equal(t, http.StatusOK, status)
	var res struct {
		OK      bool   `json:"ok"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
		Message struct {
			Type  string `json:"type"`
			User  string `json:"user"`
			BotID string `json:"bot_id"`
			Text  string `json:"text"`
			TS    string `json:"ts"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal(body, &res), string(body))
	require.True(t, res.OK, string(body))
	require.Equal(t, tb.srv.DMChannelOf(tb.alice.ID), res.Channel)
	require.Equal(t, "message", res.Message.Type)
	require.Equal(t, tb.srv.BotUserID(), res.Message.User)
	require.Equal(t, tb.srv.BotID(), res.Message.BotID)
	require.Equal(t, "hi", res.Message.Text)
	require.Equal(t, res.TS, res.Message.TS)
	require.False(t, tb.srv.Sent(res.Channel)[0].Mrkdwn)
}

func TestTSIsUniqueWhenTheClockStandsStill(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	tb := setup(t, slacktest.WithNow(func() time.Time { return at }))
	tb.srv.AddUser(tb.alice)

	_, ts1, err := tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("one", false))
	require.NoError(t, err)
	_, ts2, err := tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("two", false))
	require.NoError(t, err)
	require.Equal(t, "1700000000.000000", ts1)
	require.Equal(t, "1700000000.000001", ts2)
	require.Equal(t, at, tb.srv.AllSent()[0].At)
}

func TestPostMessageErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)
	ts := tb.srv.SendChannel("C0GENERAL1", tb.bob, "hi") // makes the channel known
	require.Regexp(t, tsPattern, ts)

	_, _, err := tb.api.PostMessage("C0NOPE0001", slack.MsgOptionText("x", false))
	requireSlackError(t, err, "channel_not_found")
	_, _, err = tb.api.PostMessage("U0STRANGER", slack.MsgOptionText("x", false))
	requireSlackError(t, err, "channel_not_found")

	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("", false))
	requireSlackError(t, err, "no_text")

	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText(strings.Repeat("a", 40001), false))
	requireSlackError(t, err, "msg_too_long")
	// The limit counts characters, not bytes.
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText(strings.Repeat("é", 40000), false))
	require.NoError(t, err)

	// Blocks without text are content.
	_, _, err = tb.api.PostMessage("C0GENERAL1", slack.MsgOptionBlocks(
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "hi", false, false), nil, nil)))
	require.NoError(t, err)

	tb.srv.Block(tb.alice.ID)
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("x", false))
	requireSlackError(t, err, "is_archived")
	_, _, err = tb.api.PostMessage(tb.srv.DMChannelOf(tb.alice.ID), slack.MsgOptionText("x", false))
	requireSlackError(t, err, "is_archived")
	tb.srv.Unblock(tb.alice.ID)
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("back", false))
	require.NoError(t, err)

	require.Len(t, tb.srv.AllSent(), 3, "failed posts are not recorded")
	require.Equal(t, 9, tb.srv.Calls("chat.postMessage"))
}

func TestRefuseNextMarkup(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)
	section := func(typ, text string) slack.MsgOption {
		return slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(typ, text, false, false), nil, nil))
	}
	pointers := func(err error) []string {
		var se slack.SlackErrorResponse
		require.ErrorAs(t, err, &se)
		return se.ResponseMetadata.Messages
	}

	tb.srv.RefuseNextMarkup()
	_, _, err := tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("*plain*", false), slack.MsgOptionDisableMarkdown())
	require.NoError(t, err, "mrkdwn off: not refused, not counted")
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("*bold*", false))
	requireSlackError(t, err, "invalid_arguments")
	require.Equal(t, []string{"[ERROR] failed to match all allowed schemas [json-pointer:/text]"}, pointers(err))
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("*bold*", false))
	require.NoError(t, err, "one refusal only")

	tb.srv.RefuseMarkupAfter(1)
	_, _, err = tb.api.PostMessage(tb.alice.ID, section(slack.MarkdownType, "*first*"))
	require.NoError(t, err)
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("alt", false), section(slack.PlainTextType, "not counted"))
	require.NoError(t, err)
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("alt", false), section(slack.MarkdownType, "*second*"))
	requireSlackError(t, err, "invalid_blocks")
	require.Equal(t, []string{"[ERROR] failed to match all allowed schemas [json-pointer:/blocks/0/text]"}, pointers(err))

	require.Len(t, tb.srv.AllSent(), 4, "refused posts are not recorded")
}

func TestConversationsOpen(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)
	require.Empty(t, tb.srv.DMChannelOf(tb.alice.ID))

	ch, noOp, already, err := tb.api.OpenConversation(&slack.OpenConversationParameters{
		Users: []string{tb.alice.ID}, ReturnIM: true,
	})
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(ch.ID, "D"), ch.ID)
	require.True(t, ch.IsIM)
	require.Equal(t, tb.alice.ID, ch.User)
	require.False(t, noOp)
	require.False(t, already)
	require.Equal(t, ch.ID, tb.srv.DMChannelOf(tb.alice.ID))

	again, _, already, err := tb.api.OpenConversation(&slack.OpenConversationParameters{Users: []string{tb.alice.ID}})
	require.NoError(t, err)
	require.Equal(t, ch.ID, again.ID)
	require.True(t, already)

	_, _, _, err = tb.api.OpenConversation(&slack.OpenConversationParameters{Users: []string{"U0NOBODY01"}})
	requireSlackError(t, err, "user_not_found")

	// SendDM opens the DM of its sender.
	bobDM, _ := tb.srv.SendDM(tb.bob, "hi")
	got, _, _, err := tb.api.OpenConversation(&slack.OpenConversationParameters{Users: []string{tb.bob.ID}})
	require.NoError(t, err)
	require.Equal(t, bobDM, got.ID)
	require.NotEqual(t, ch.ID, bobDM)
}

func TestUsersInfo(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)

	u, err := tb.api.GetUserInfo(tb.alice.ID)
	require.NoError(t, err)
	require.Equal(t, tb.alice.ID, u.ID)
	require.Equal(t, "alice", u.Name)
	require.Equal(t, "Alice Liddell", u.RealName)
	require.Equal(t, "Alice Liddell", u.Profile.RealName)
	require.Equal(t, "ali", u.Profile.DisplayName)
	require.False(t, u.IsBot)
	require.Equal(t, tb.srv.TeamID(), u.TeamID)

	bot, err := tb.api.GetUserInfo(tb.srv.BotUserID())
	require.NoError(t, err)
	require.True(t, bot.IsBot)
	require.Equal(t, "parley", bot.Name)

	_, err = tb.api.GetUserInfo("U0NOBODY01")
	requireSlackError(t, err, "user_not_found")

	// Senders of events are known too; empty fields keep what was known.
	tb.srv.SendDM(slacktest.User{ID: tb.alice.ID}, "hi")
	tb.srv.SendChannel("C0GENERAL1", tb.bob, "hello")
	u, err = tb.api.GetUserInfo(tb.alice.ID)
	require.NoError(t, err)
	require.Equal(t, "alice", u.Name)
	u, err = tb.api.GetUserInfo(tb.bob.ID)
	require.NoError(t, err)
	require.Equal(t, "Bob", u.RealName)
	require.Empty(t, u.Profile.DisplayName)
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)

	tb.srv.RateLimitNext("chat.postMessage", 1500*time.Millisecond)
	_, _, err := tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 2*time.Second, rl.RetryAfter)
	require.Empty(t, tb.srv.AllSent())

	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("x", false))
	require.NoError(t, err)
	require.Equal(t, 2, tb.srv.Calls("chat.postMessage"))

	tb.srv.RateLimitAfter("auth.test", 1, 10*time.Millisecond)
	_, err = tb.api.AuthTest()
	require.NoError(t, err)
	_, err = tb.api.AuthTest()
	require.ErrorAs(t, err, &rl)
	require.Equal(t, time.Second, rl.RetryAfter, "at least one second")
	_, err = tb.api.AuthTest()
	require.NoError(t, err)

	tb.srv.RateLimitNext("auth.test", time.Second)
	status, body := rawCall(t, tb.srv, http.MethodPost, "auth.test", tb.srv.BotToken(), "", "")
	require.Equal(t, http.StatusTooManyRequests, status)
	require.JSONEq(t, `{"ok":false,"error":"ratelimited"}`, string(body))
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)

	tb.srv.FailNext("chat.postMessage", "internal_error")
	tb.srv.FailNext("chat.postMessage", "channel_not_found")
	_, _, err := tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("x", false))
	requireSlackError(t, err, "internal_error")
	_, _, err = tb.api.PostMessage(tb.alice.ID, slack.MsgOptionText("x", false))
	requireSlackError(t, err, "channel_not_found")

	tb.srv.FailNextStatus("users.info", http.StatusServiceUnavailable)
	_, err = tb.api.GetUserInfo(tb.alice.ID)
	var sc slack.StatusCodeError
	require.ErrorAs(t, err, &sc)
	require.Equal(t, http.StatusServiceUnavailable, sc.Code)
	_, err = tb.api.GetUserInfo(tb.alice.ID)
	require.NoError(t, err)
	require.Equal(t, 2, tb.srv.Calls("users.info"))
}

func TestRevokeTokens(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.RevokeTokens()

	_, err := tb.api.AuthTest()
	requireSlackError(t, err, "token_revoked")
	_, _, err = tb.api.StartSocketModeContext(context.Background())
	requireSlackError(t, err, "token_revoked")
	_, err = newAPI(t, tb.srv, "xoxb-other").AuthTest()
	requireSlackError(t, err, "invalid_auth")
}

func TestRawWebAPI(t *testing.T) {
	t.Parallel()
	tb := setup(t)

	status, body := rawCall(t, tb.srv, http.MethodPost, "chat.teleport", tb.srv.BotToken(), "", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"ok":false,"error":"unknown_method"}`, string(body))
	require.Equal(t, 1, tb.srv.Calls("chat.teleport"))

	// The token may come in the form instead of the header.
	form := url.Values{"token": {tb.srv.BotToken()}}.Encode()
	status, body = rawCall(t, tb.srv, http.MethodPost, "auth.test", "", "application/x-www-form-urlencoded", form)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"ok":true`)

	status, body = rawCall(t, tb.srv, http.MethodGet, "auth.test", tb.srv.BotToken(), "", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(body), `"ok":true`)

	status, body = rawCall(t, tb.srv, http.MethodPost, "apps.connections.open", tb.srv.BotToken(), "application/json", "")
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"ok":false,"error":"not_allowed_token_type"}`, string(body))

	status, body = rawCall(t, tb.srv, http.MethodPost, "apps.connections.open", tb.srv.AppToken(), "application/json", "")
	require.Equal(t, http.StatusOK, status)
	var open struct {
		OK  bool   `json:"ok"`
		URL string `json:"url"`
	}
	require.NoError(t, json.Unmarshal(body, &open))
	require.True(t, open.OK)
	require.Regexp(t, `^ws://127\.0\.0\.1:\d+/socket\?ticket=[0-9a-f]+$`, open.URL)

	status, body = rawCall(t, tb.srv, http.MethodPost, "chat.postMessage", tb.srv.BotToken(), "application/json", `{"channel":`)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"ok":false,"error":"invalid_json"}`, string(body))
}

// rawCall makes one Web API request without slack-go.
func rawCall(t *testing.T, srv *slacktest.Server, method, apiMethod, token, ctype, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, srv.APIURL()+apiMethod, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, out
}

func TestChannelRateLimit(t *testing.T) {
	t.Parallel()
	clock := &testClock{now: time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)}
	tb := setup(t, slacktest.WithNow(clock.Now), slacktest.WithChannelRateLimit(2, time.Second))
	tb.srv.AddUser(tb.alice)
	tb.srv.AddUser(tb.bob)
	post := func(channel string) error {
		_, _, err := tb.api.PostMessage(channel, slack.MsgOptionText("tick", false))
		return err
	}
	var rl *slack.RateLimitedError

	require.NoError(t, post(tb.alice.ID))
	dm := tb.srv.DMChannelOf(tb.alice.ID)
	require.NoError(t, post(dm), "the burst passes")
	err := post(tb.alice.ID)
	require.ErrorAs(t, err, &rl, "the third at once is over the limit, by user id or DM id alike")
	require.Equal(t, time.Second, rl.RetryAfter)
	require.NoError(t, post(tb.bob.ID), "each channel has its own limit")

	clock.Advance(500 * time.Millisecond)
	require.ErrorAs(t, post(dm), &rl)
	require.Equal(t, time.Second, rl.RetryAfter, "half a second left, in whole seconds")
	clock.Advance(500 * time.Millisecond)
	require.NoError(t, post(dm), "one more a second later, to the instant")
	status, body := rawCall(t, tb.srv, http.MethodPost, "chat.postMessage", tb.srv.BotToken(), "application/json", `{"channel":"`+dm+`","text":"tick"}`)
	require.Equal(t, http.StatusTooManyRequests, status, "and only one")
	require.JSONEq(t, `{"ok":false,"error":"ratelimited"}`, string(body))

	require.Len(t, tb.srv.Sent(dm), 3, "a limited post is not posted")
	require.Equal(t, 3, tb.srv.RateLimited())
	tb.srv.RateLimitNext("auth.test", time.Second)
	_, err = tb.api.AuthTest()
	require.ErrorAs(t, err, &rl)
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
