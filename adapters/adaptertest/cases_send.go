package adaptertest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func testReply(t *testing.T, rig *Rig) {
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	const text = "Hello, Ålice! Ça va? 👋"
	res := h.send(t, thread, text)
	sent := h.settled(t, thread)
	require.Len(t, sent, 1, "one short reply is one message")
	require.Equal(t, text, sent[0].Text)
	h.checkIDs(t, res, sent)
}

func testReplyTwoUsers(t *testing.T, rig *Rig) {
	alice, bob := needTwoUsers(t, rig)
	h := begin(t, rig)
	ta := h.greet(t, alice)
	tb := h.greet(t, bob)
	require.NotEqual(t, ta, tb)
	ra := h.send(t, ta, "for Alice only")
	rb := h.send(t, tb, "for Bob only")
	sa, sb := h.settled(t, ta), h.settled(t, tb)
	require.Len(t, sa, 1, "Alice's chat")
	require.Equal(t, "for Alice only", sa[0].Text)
	require.Len(t, sb, 1, "Bob's chat")
	require.Equal(t, "for Bob only", sb[0].Text)
	h.checkIDs(t, ra, sa)
	h.checkIDs(t, rb, sb)
}

// requireParts checks a split reply: in order, each part within the limit,
// nothing lost or repeated, one id per part.
func requireParts(t *testing.T, h *harness, text string, res core.SendResult, sent []Sent) {
	t.Helper()
	limit := h.rig.Adapter.Capabilities().MaxMessageLength
	for i, s := range sent {
		require.LessOrEqual(t, utf8.RuneCountInString(s.Text), limit, "part %d is over Capabilities().MaxMessageLength runes", i+1)
		require.True(t, utf8.ValidString(s.Text), "part %d is not valid UTF-8 (cut inside a character?)", i+1)
	}
	requireReassembles(t, text, sent)
	h.checkIDs(t, res, sent)
}

func testLongReply(t *testing.T, rig *Rig) {
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	limit := rig.Adapter.Capabilities().MaxMessageLength
	text, code := longText(limit)
	require.Greater(t, utf8.RuneCountInString(text), limit)
	res := h.send(t, thread, text)
	sent := h.settled(t, thread)
	require.GreaterOrEqual(t, len(sent), 2, "a text over the limit must arrive in several parts")
	requireParts(t, h, text, res, sent)
	whole := 0
	for _, s := range sent {
		if strings.Contains(s.Text, code) {
			whole++
		}
	}
	require.Equal(t, 1, whole, "the code block (shorter than the limit) must arrive whole in one part")
}

// testIdempotentRepeat: an adapter that says the platform drops a repeat
// of an idempotency key (what the core resends after a crash) shows a
// two-part message once, and answers the repeat with the first ids.
func testIdempotentRepeat(t *testing.T, rig *Rig) {
	if rig.Adapter.Capabilities().IdempotencyWindow <= 0 {
		t.Skip("adaptertest: the platform does not drop repeats (Capabilities().IdempotencyWindow is 0): the core bounds the sends in doubt instead")
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	text := twoParts(rig.Adapter.Capabilities().MaxMessageLength)
	msg := core.OutboundMessage{ChannelThreadID: thread, Text: text, IdempotencyKey: "job-42"}
	first := h.sendMsg(t, msg)
	again := h.sendMsg(t, msg)
	sent := h.settled(t, thread)
	require.Len(t, sent, 2, "the repeat must not show again")
	requireParts(t, h, text, first, sent)
	require.Equal(t, first.PlatformMessageIDs, again.PlatformMessageIDs, "the repeat is answered with the messages the first send made")
}

// twoParts returns a text that splits into exactly two parts at limit.
func twoParts(limit int) string {
	n := max(limit*3/5, 2)
	return paragraph("1", n) + "\n\n" + paragraph("2", n)
}

func testRateLimitNextSend(t *testing.T, rig *Rig) {
	if rig.RateLimitNextSend == nil {
		t.Skip("adaptertest: the fake platform has no rate limits (Rig.RateLimitNextSend is nil)")
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	const delay = time.Second
	rig.RateLimitNextSend(t, delay)
	began := time.Now()
	res := h.send(t, thread, "sent after the rate limit")
	sent := h.settled(t, thread)
	require.Len(t, sent, 1, "a rate-limited message must be delivered exactly once")
	require.Equal(t, "sent after the rate limit", sent[0].Text)
	require.False(t, sent[0].At.Before(began.Add(delay)),
		"delivered %v after Send began, before the %v the platform asked to wait", sent[0].At.Sub(began), delay)
	h.checkIDs(t, res, sent)
}

func testRateLimitAfter(t *testing.T, rig *Rig) {
	if rig.RateLimitAfter == nil {
		t.Skip("adaptertest: the fake platform has no rate limits (Rig.RateLimitAfter is nil)")
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	limit := rig.Adapter.Capabilities().MaxMessageLength
	text := twoParts(limit)
	const delay = time.Second
	rig.RateLimitAfter(t, 1, delay)
	began := time.Now()
	res := h.send(t, thread, text)
	sent := h.settled(t, thread)
	require.Len(t, sent, 2, "each part exactly once: a part already sent must not be resent")
	requireParts(t, h, text, res, sent)
	require.False(t, sent[1].At.Before(began.Add(delay)),
		"part 2 delivered %v after Send began, before the %v the platform asked to wait", sent[1].At.Sub(began), delay)
}

// requirePermanent sends to thread and requires a prompt permanent error.
func requirePermanent(t *testing.T, h *harness, thread string) {
	t.Helper()
	began := time.Now()
	_, err := h.trySend(thread, "are you still there?")
	took := time.Since(began)
	require.Error(t, err, "Send to %q must fail", thread)
	require.True(t, core.IsPermanent(err), "the error must be a core.PermanentError so the core stops retrying: %v", err)
	require.Less(t, took, promptly, "a permanent failure must not be retried")
}

func testPermanentErrorBlocked(t *testing.T, rig *Rig) {
	if rig.Block == nil {
		t.Skip("adaptertest: users cannot block the bot on this platform (Rig.Block is nil)")
	}
	h := begin(t, rig)
	alice := users(rig)[0]
	thread := h.greet(t, alice)
	rig.Block(t, alice)
	requirePermanent(t, h, thread)
}

func testPermanentErrorUnknownThread(t *testing.T, rig *Rig) {
	if rig.UnknownThread == "" {
		t.Skip("adaptertest: the platform has no unknown chats (Rig.UnknownThread is empty)")
	}
	h := begin(t, rig)
	requirePermanent(t, h, rig.UnknownThread)
}
