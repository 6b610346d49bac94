package slack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core"
)

func TestSendEscapesAndSplits(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	var long strings.Builder
	for i := 0; long.Len() < 9000; i++ {
		fmt.Fprintf(&long, "Line %d: fish & chips <b>not bold</b> for <@U0GRACE001>.\n", i)
	}
	text := strings.TrimSpace(long.String())
	res, err := b.send(ch, text)
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Len(t, sent, 3)
	var joined strings.Builder
	for i, m := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(slacktest.Unescape(m.Text)), maxMessageLength)
		require.NotContains(t, m.Text, "<", "< is escaped, so nothing is read as a mention or link")
		require.Contains(t, m.Text, "&amp;")
		require.Equal(t, m.TS, res.PlatformMessageIDs[i])
		joined.WriteString(slacktest.Unescape(m.Text))
	}
	require.Equal(t, text, joined.String(), "in order, nothing lost")
}

func TestSendRateLimitDeliversOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.RateLimitNext("chat.postMessage", time.Second)
	start := time.Now()
	res, err := b.send(ch, "after the limit")
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Equal(t, []string{"after the limit"}, texts(sent), "delivered once")
	require.GreaterOrEqual(t, sent[0].At.Sub(start), time.Second, "Retry-After was honoured")
	require.Equal(t, 2, b.srv.Calls("chat.postMessage"))
	require.Equal(t, []string{sent[0].TS}, res.PlatformMessageIDs)
	require.Contains(t, b.logs.String(), "slack rate limit, waiting")
}

func TestSendRateLimitPastTheDeadline(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket, func(a *Adapter) { a.sendTimeout = 500 * time.Millisecond })
	ch := b.greet(t, ada)
	b.srv.RateLimitNext("chat.postMessage", 5*time.Second)
	_, err := b.send(ch, "never")
	require.ErrorContains(t, err, "past the deadline")
	require.False(t, core.IsPermanent(err), "the message is kept for later")
	require.Empty(t, b.srv.Sent(ch))
}

func TestSendServerErrorIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.FailNextStatus("chat.postMessage", 503)
	_, err := b.send(ch, "through")
	require.NoError(t, err)
	require.Equal(t, []string{"through"}, texts(b.srv.Sent(ch)))
	require.Equal(t, 2, b.srv.Calls("chat.postMessage"))
}

func TestSendInternalErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)
	b.srv.FailNext("chat.postMessage", "internal_error")
	_, err := b.send(ch, "maybe posted")
	require.ErrorContains(t, err, "internal_error")
	require.False(t, core.IsPermanent(err))
	require.Equal(t, 1, b.srv.Calls("chat.postMessage"), "slack may have posted it: no second copy")
}

func TestSendPermanentErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	ch := b.greet(t, ada)

	_, err := b.send("D0UNKNOWN01", "hello?")
	require.Contains(t, permanentReasonOf(t, err), "channel not found")

	_, err = b.send("not a channel", "hello?")
	require.Contains(t, permanentReasonOf(t, err), "not a slack conversation id")

	_, err = b.send(ch, "   ")
	require.Contains(t, permanentReasonOf(t, err), "empty")

	b.srv.Block(ada.ID)
	_, err = b.send(ch, "are you there?")
	require.Contains(t, permanentReasonOf(t, err), "archived")
	require.Empty(t, b.srv.Sent(ch))
}

func TestSendWithRevokedTokenIsNotPermanent(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeEvents)
	ch := b.greet(t, ada)
	b.srv.FailNext("chat.postMessage", "token_revoked")
	_, err := b.send(ch, "later")
	require.ErrorContains(t, err, "token_revoked (is bot_token wrong or revoked?)")
	require.False(t, core.IsPermanent(err), "fixing the token makes it deliverable")
	require.NotContains(t, err.Error(), b.srv.BotToken())
}

func TestSendBeforeStart(t *testing.T) {
	t.Parallel()
	b := newBundle(t, ModeSocket)
	_, err := b.send("D0ADA00001", "hi")
	require.ErrorContains(t, err, "not started")
}

func TestOpenDM(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.srv.AddUser(grace)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ch, err := b.adapter.OpenDM(ctx, grace.ID)
	require.NoError(t, err)
	require.Equal(t, b.srv.DMChannelOf(grace.ID), ch)
	_, err = b.send(ch, "hello Grace")
	require.NoError(t, err)
	require.Equal(t, []string{"hello Grace"}, texts(b.srv.Sent(ch)))

	_, err = b.adapter.OpenDM(ctx, "U0NOBODY01")
	require.Contains(t, permanentReasonOf(t, err), "user not found")
	_, err = b.adapter.OpenDM(ctx, "bad id")
	require.Contains(t, permanentReasonOf(t, err), "not a slack user id")
}

func TestSendByUserIDOpensTheDM(t *testing.T) {
	t.Parallel()
	b := setup(t, ModeSocket)
	b.srv.AddUser(grace)
	ctx, cancel := contextWithTimeout()
	defer cancel()

	res, err := b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: grace.ID, Text: "by user id"})
	require.NoError(t, err)
	ch := b.srv.DMChannelOf(grace.ID)
	require.NotEmpty(t, ch, "conversations.open opened the DM")
	_, err = b.adapter.Send(ctx, core.OutboundMessage{ChannelUserID: grace.ID, Text: "by channel user id"})
	require.NoError(t, err)
	sent := b.srv.Sent(ch)
	require.Equal(t, []string{"by user id", "by channel user id"}, texts(sent))
	require.Equal(t, []string{sent[0].TS}, res.PlatformMessageIDs)
	require.Equal(t, 2, b.srv.Calls("conversations.open"))
	require.Empty(t, b.srv.Sent(grace.ID), "nothing was posted to the user id itself")

	_, err = b.adapter.Send(ctx, core.OutboundMessage{ChannelThreadID: "U0NOBODY01", Text: "hello?"})
	require.Contains(t, permanentReasonOf(t, err), "user not found")
}
