package adaptertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

const (
	// waitFor bounds every wait for the adapter or the fake platform.
	waitFor = 10 * time.Second
	// promptly is how fast a permanent send failure must come back: far
	// below any retry budget, since retrying cannot help.
	promptly = 2 * time.Second
	// stopWithin is how long Stop may take ("returns promptly").
	stopWithin = 3 * time.Second
	// pollEvery is how often a wait on the fake platform looks again.
	pollEvery = 5 * time.Millisecond
)

// The people the suite plays when a Rig does not bring its own. Their ids
// are numeric and at least eight characters long so they fit the common
// platform shapes (Telegram and Discord ids, web client ids); their names
// are not ASCII, to catch display names that lose characters.
var (
	// Alice is the first user.
	Alice = User{ID: "700000001", Name: "Alice Ångström"}
	// Bob is the second user.
	Bob = User{ID: "700000002", Name: "Bob Brontë"}
)

// testCase is one conformance check; it builds on a fresh Rig.
type testCase struct {
	name string
	run  func(t *testing.T, rig *Rig)
}

// cases lists the suite in the order Run executes it.
func cases() []testCase {
	return []testCase{
		{"CapabilitiesSane", testCapabilitiesSane},
		{"InboundDM", testInboundDM},
		{"InboundDMTwoUsers", testInboundDMTwoUsers},
		{"IgnoredGroup", testIgnoredGroup},
		{"IgnoredChannel", testIgnoredChannel},
		{"IgnoredOwn", testIgnoredOwn},
		{"IgnoredEdit", testIgnoredEdit},
		{"Reply", testReply},
		{"ReplyTwoUsers", testReplyTwoUsers},
		{"LongReply", testLongReply},
		{"IdempotentRepeat", testIdempotentRepeat},
		{"RateLimitNextSend", testRateLimitNextSend},
		{"RateLimitAfter", testRateLimitAfter},
		{"PermanentErrorBlocked", testPermanentErrorBlocked},
		{"PermanentErrorUnknownThread", testPermanentErrorUnknownThread},
		{"PlainTextAsWritten", testPlainTextAsWritten},
		{"RichText", testRichText},
		{"RichTextReserved", testRichTextReserved},
		{"LongRichText", testLongRichText},
		{"LongCodeBlock", testLongCodeBlock},
		{"RefusedMarkup", testRefusedMarkup},
		{"RefusedMarkupLater", testRefusedMarkupLater},
		{"Image", testImage},
		{"ImageLongCaption", testImageLongCaption},
		{"Files", testFiles},
		{"FileFetchFails", testFileFetchFails},
		{"SendFiles", testSendFiles},
		{"Tap", testTap},
		{"UserEdit", testUserEdit},
		{"UserDelete", testUserDelete},
		{"UserReaction", testUserReaction},
		{"BotReacts", testBotReacts},
		{"TypingConsistent", testTypingConsistent},
		{"Typing", testTyping},
		{"Stop", testStop},
	}
}

// Run checks an adapter against the contract in core/adapter.go. Each case
// is a subtest with a fresh Rig from newRig; the suite starts the adapter
// with a Recorder (cancelling Start's ctx once Start returns, as a host
// with a start-up timeout does) and stops it at the end of the case.
//
// Cases run one after another, and the caller must not run Run in parallel
// with other tests of its package: the Stop case checks that no goroutine
// outlives the adapter, which goroutines of concurrent tests would confuse.
// The adapter's clock must be near the wall clock (SentAt is checked
// against it).
func Run(t *testing.T, newRig func(t *testing.T) *Rig) {
	t.Helper()
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			rig := newRig(t)
			checkRig(t, rig)
			c.run(t, rig)
		})
	}
}

// checkRig fails fast on a Rig the suite cannot use.
func checkRig(t *testing.T, rig *Rig) {
	t.Helper()
	require.NotNil(t, rig, "adaptertest: newRig returned nil")
	require.NotNil(t, rig.Adapter, "adaptertest: Rig.Adapter is required")
	require.NotNil(t, rig.DM, "adaptertest: Rig.DM is required")
	require.NotNil(t, rig.ThreadOf, "adaptertest: Rig.ThreadOf is required")
	require.NotNil(t, rig.Sent, "adaptertest: Rig.Sent is required")
	users := rig.Users
	if users == nil {
		users = []User{Alice, Bob}
	}
	if rig.SingleUser {
		require.NotEmpty(t, users, "adaptertest: Rig.Users is empty")
	} else {
		require.GreaterOrEqual(t, len(users), 2, "adaptertest: Rig.Users needs two users unless Rig.SingleUser is set")
		require.NotEqual(t, users[0].ID, users[1].ID, "adaptertest: Rig.Users must have distinct ids")
	}
}

// users returns the people the suite plays on rig.
func users(rig *Rig) []User {
	us := rig.Users
	if us == nil {
		us = []User{Alice, Bob}
	}
	if rig.SingleUser {
		return us[:1]
	}
	return us
}

// needTwoUsers skips a case the platform cannot express.
func needTwoUsers(t *testing.T, rig *Rig) (User, User) {
	t.Helper()
	if rig.SingleUser {
		t.Skip("adaptertest: the platform has a single user (Rig.SingleUser is set)")
	}
	us := users(rig)
	return us[0], us[1]
}

// harness is one started adapter with its recorder.
type harness struct {
	rig       *Rig
	rec       *Recorder
	stopped   bool
	sentinels int
	sends     int
}

// begin starts rig.Adapter with a fresh Recorder and arranges for it to be
// stopped when the test ends.
func begin(t *testing.T, rig *Rig) *harness {
	t.Helper()
	h := &harness{rig: rig, rec: NewRecorder()}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	err := rig.Adapter.Start(ctx, h.rec)
	cancel()
	require.NoError(t, err, "adaptertest: starting the adapter")
	t.Cleanup(func() {
		if h.stopped {
			return
		}
		h.stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := rig.Adapter.Stop(ctx); err != nil {
			t.Errorf("adaptertest: stopping the adapter: %v", err)
		}
	})
	return h
}

// stop stops the adapter now and returns how long Stop took.
func (h *harness) stop(t *testing.T) time.Duration {
	t.Helper()
	require.False(t, h.stopped, "adaptertest: adapter stopped twice")
	h.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	began := time.Now()
	require.NoError(t, h.rig.Adapter.Stop(ctx), "adaptertest: stopping the adapter")
	return time.Since(began)
}

// greet makes user write to the bot, waits for the core to get it and
// returns the thread to reply on, so later sends go to a user who has
// written before (as the core only ever does).
func (h *harness) greet(t *testing.T, user User) string {
	t.Helper()
	before := len(h.rec.Messages())
	text := "hello from " + user.Name
	thread := h.rig.DM(t, user, text)
	msgs := h.rec.Wait(t, before+1, waitFor)
	require.Equal(t, text, msgs[before].Text, "adaptertest: the greeting DM")
	require.Equal(t, thread, h.rig.ThreadOf(t, user), "adaptertest: ThreadOf(user) must be the thread of the user's DM")
	return thread
}

// send sends text to thread through the adapter and requires success.
func (h *harness) send(t *testing.T, thread, text string) core.SendResult {
	t.Helper()
	res, err := h.trySend(thread, text)
	require.NoError(t, err, "adaptertest: Send to %q", thread)
	return res
}

// trySend sends text to thread through the adapter.
func (h *harness) trySend(thread, text string) (core.SendResult, error) {
	return h.trySendMsg(core.OutboundMessage{ChannelThreadID: thread, Text: text})
}

// sendMsg sends msg through the adapter and requires success.
func (h *harness) sendMsg(t *testing.T, msg core.OutboundMessage) core.SendResult {
	t.Helper()
	res, err := h.trySendMsg(msg)
	require.NoError(t, err, "adaptertest: sending %+v", msg)
	return res
}

// trySendMsg sends msg through the adapter, with SendImage when it has an
// image (the suite only gives one to a core.ImageSender).
func (h *harness) trySendMsg(msg core.OutboundMessage) (core.SendResult, error) {
	h.sends++
	msg.ConversationID = 1
	if msg.IdempotencyKey == "" {
		msg.IdempotencyKey = fmt.Sprintf("adaptertest-%d", h.sends)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if is, ok := h.rig.Adapter.(core.ImageSender); ok && msg.ImageURL != "" {
		return is.SendImage(ctx, msg)
	}
	return h.rig.Adapter.Send(ctx, msg)
}

// settled returns everything delivered to thread so far. Delivery may be
// asynchronous (a browser's event stream), so it sends a sentinel, waits
// for it to arrive and returns what came before it: since delivery to one
// thread is in order, nothing sent earlier can still be on its way.
func (h *harness) settled(t *testing.T, thread string) []Sent {
	t.Helper()
	h.sentinels++
	mark := fmt.Sprintf("adaptertest sentinel %d", h.sentinels)
	h.send(t, thread, mark)
	var got []Sent
	deadline := time.Now().Add(waitFor)
	for {
		got = h.rig.Sent(t, thread)
		for i, s := range got {
			if strings.TrimSpace(s.Text) == mark {
				require.Len(t, got, i+1, "adaptertest: messages arrived after the sentinel in %q", thread)
				for _, s := range got {
					require.Equal(t, thread, s.ChannelThreadID, "adaptertest: Rig.Sent(%q) returned another chat's message", thread)
				}
				return got[:i]
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("adaptertest: sentinel %q never reached %q; it holds %d message(s)", mark, thread, len(got))
		}
		time.Sleep(pollEvery) // polling the fake: Rig.Sent has no change signal
	}
}

// checkIDs requires one id per delivered part, matching what the platform
// shows (or, when it shows none, distinct and non-empty).
func (h *harness) checkIDs(t *testing.T, res core.SendResult, sent []Sent) {
	t.Helper()
	require.Len(t, res.PlatformMessageIDs, len(sent), "adaptertest: SendResult needs one id per part")
	seen := map[string]bool{}
	for i, id := range res.PlatformMessageIDs {
		require.NotEmpty(t, id, "adaptertest: SendResult id %d is empty", i)
		require.False(t, seen[id], "adaptertest: SendResult id %q repeats", id)
		seen[id] = true
		if !h.rig.NoMessageIDs {
			require.Equal(t, sent[i].PlatformMessageID, id, "adaptertest: SendResult id %d must be the platform's id of part %d", i, i)
		}
	}
}

// eventually waits for cond, failing with msg after waitFor.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("adaptertest: "+msg, args...)
		}
		time.Sleep(pollEvery) // polling the fake: Rig funcs have no change signal
	}
}
