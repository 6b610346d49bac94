package discord

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestReplyReachesTheChannel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)

	res, err := b.send(ch, "run-12", "Hello, Ada! 👋 @everyone")
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, "Hello, Ada! 👋 @everyone", sent[0].Content)
	require.Equal(t, "run-12.0", sent[0].Nonce)
	require.True(t, sent[0].EnforceNonce)
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestLongReplyArrivesInParts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	var text strings.Builder
	for i := 0; utf8.RuneCountInString(text.String()) < 4500; i++ {
		text.WriteString("wörd" + strconv.Itoa(i) + " ")
	}
	long := string([]rune(text.String())[:4500])

	res, err := b.send(ch, "run-13", long)
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 3)
	for i, m := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(m.Content), 2000, "part %d", i+1)
		require.Equal(t, "run-13."+strconv.Itoa(i), m.Nonce)
	}
	require.Equal(t, long, strings.Join(contents(sent), ""), "in order, nothing lost")
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRateLimitIsHonoured(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	const retryAfter = 700 * time.Millisecond
	b.srv.RateLimitNext("messages", retryAfter)
	began := time.Now()

	res, err := b.send(ch, "run-14", "after the limit")
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 1, "delivered once")
	require.Equal(t, "after the limit", sent[0].Content)
	require.False(t, sent[0].At.Before(began.Add(retryAfter)), "delivered %v after the send began", sent[0].At.Sub(began))
	require.Equal(t, 2, b.srv.Calls("messages"))
	require.Equal(t, ids(sent), res.PlatformMessageIDs)
}

func TestRateLimitPastTheDeadlineFails(t *testing.T) {
	t.Parallel()
	b := setup(t, func(a *Adapter) { a.sendTimeout = 500 * time.Millisecond })
	ch := b.greet(t, ada)
	b.srv.RateLimitNext("messages", time.Minute)
	began := time.Now()
	_, err := b.send(ch, "run-15", "too late")
	require.ErrorContains(t, err, "sending discord message: rate limited for 1m0s, past the deadline")
	require.False(t, core.IsPermanent(err), "the core may try again later")
	require.Less(t, time.Since(began), 2*time.Second, "no waiting for what cannot be waited for")

	// The bucket stays exhausted for the minute: the next send fails as
	// fast, without asking Discord (discordgo alone would sleep a minute).
	calls := b.srv.Calls("messages")
	began = time.Now()
	_, err = b.send(ch, "run-15b", "still too early")
	require.ErrorContains(t, err, "past the deadline")
	require.Less(t, time.Since(began), 2*time.Second)
	require.Equal(t, calls, b.srv.Calls("messages"))
	require.Empty(t, b.srv.Sent(ch))
}

func TestServerErrorIsRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	b.srv.FailNext("messages", 500, 0, "Internal Server Error")
	res, err := b.send(ch, "run-16", "despite the hiccup")
	require.NoError(t, err)
	require.Equal(t, []string{"despite the hiccup"}, contents(b.srv.Sent(ch)))
	require.Len(t, res.PlatformMessageIDs, 1)
}

func TestPermanentErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, b *testBundle) (channelID string)
		reason  string
	}{
		{"blocked", func(t *testing.T, b *testBundle) string {
			ch := b.greet(t, ada)
			b.srv.Block(ada.ID)
			return ch
		}, "the user does not accept DMs from the bot"},
		{"invalid form body", func(t *testing.T, b *testBundle) string {
			ch := b.greet(t, ada)
			b.srv.FailNext("messages", 400, 50035, "Invalid Form Body")
			return ch
		}, "invalid form body"},
		{"unknown channel", func(*testing.T, *testBundle) string { return "999999999999999999" }, "unknown channel"},
		{"missing access", func(t *testing.T, b *testBundle) string {
			ch := b.greet(t, ada)
			b.srv.FailNext("messages", 403, 50001, "Missing Access")
			return ch
		}, "discord forbids it (missing access, code 50001: Missing Access)"},
		{"not a channel id", func(*testing.T, *testBundle) string { return "../users/@me" }, `channel thread id "../users/@me" is not a discord channel id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ch := tc.prepare(t, b)
			calls := b.srv.Calls("messages")
			began := time.Now()
			_, err := b.send(ch, "run-17", "are you still there?")
			require.True(t, core.IsPermanent(err), "want permanent, got %v", err)
			require.Contains(t, permanentReason(t, err), tc.reason)
			require.Less(t, time.Since(began), time.Second, "not retried")
			require.LessOrEqual(t, b.srv.Calls("messages")-calls, 1, "not retried")
		})
	}
}

func TestResendIsDeduplicated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	text := strings.Repeat("a", 1500) + "\n\n" + strings.Repeat("b", 1500)

	first, err := b.send(ch, "run-18", text)
	require.NoError(t, err)
	// The process crashed before recording the send; the core sends again.
	second, err := b.send(ch, "run-18", text)
	require.NoError(t, err)

	sent := b.srv.Sent(ch)
	require.Len(t, sent, 2, "one message per part")
	require.Equal(t, text, strings.Join(contents(sent), ""))
	require.Equal(t, first.PlatformMessageIDs, second.PlatformMessageIDs, "the resend reports the same messages")
}

func TestTyping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ch := b.greet(t, ada)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, b.adapter.Typing(ctx, ch))
	require.NoError(t, b.adapter.Typing(ctx, ch))
	require.Equal(t, 2, b.srv.Typing(ch))
	require.Empty(t, b.srv.Sent(ch), "typing sends no message")
	require.True(t, core.IsPermanent(b.adapter.Typing(ctx, "999999999999999999")))
}

func TestOpenDM(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.AddUser(grace)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	ch, err := b.adapter.OpenDM(ctx, grace.ID)
	require.NoError(t, err)
	require.Equal(t, b.srv.DMChannelOf(grace.ID), ch)
	_, err = b.send(ch, "job-7", "good morning")
	require.NoError(t, err)
	require.Equal(t, []string{"good morning"}, contents(b.srv.Sent(ch)))

	_, err = b.adapter.OpenDM(ctx, "not-an-id")
	require.True(t, core.IsPermanent(err))
}
