package adaptertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func testCapabilitiesSane(t *testing.T, rig *Rig) {
	caps := rig.Adapter.Capabilities()
	require.Positive(t, caps.MaxMessageLength, "Capabilities().MaxMessageLength")
	require.NotEmpty(t, caps.Markup, "Capabilities().Markup")
	require.NotEmpty(t, rig.Adapter.Name(), "Name()")
	require.NotEmpty(t, rig.Adapter.Platform(), "Platform()")
}

// requireDM checks one delivered DM against what user sent.
func requireDM(t *testing.T, rig *Rig, got core.InboundMessage, user User, thread, text string) {
	t.Helper()
	require.Equal(t, rig.Adapter.Platform(), got.Platform, "Platform")
	require.Equal(t, thread, got.ChannelThreadID, "ChannelThreadID must be the id Rig.DM returned")
	require.Equal(t, user.ID, got.ChannelUserID, "ChannelUserID")
	require.Equal(t, user.Name, got.DisplayName, "DisplayName")
	require.Equal(t, text, got.Text, "Text")
	require.NotEmpty(t, got.PlatformMessageID, "PlatformMessageID")
	require.False(t, got.SentAt.IsZero(), "SentAt is zero")
	require.WithinDuration(t, time.Now(), got.SentAt, time.Minute, "SentAt must be the time the user wrote")
	require.True(t, got.Direct, "Direct")
}

func testInboundDM(t *testing.T, rig *Rig) {
	h := begin(t, rig)
	alice := users(rig)[0]
	const text = "Hi there — wie geht's? 日本語もOK 🙂"
	thread := rig.DM(t, alice, text)
	require.NotEmpty(t, thread, "Rig.DM returned an empty thread id")
	// A second DM is the sentinel: once it is in, a duplicate of the
	// first would be too.
	thread2 := rig.DM(t, alice, "and a second line")
	msgs := h.rec.Wait(t, 2, waitFor)
	require.Len(t, msgs, 2, "two DMs must reach the core exactly once each")
	requireDM(t, rig, msgs[0], alice, thread, text)
	requireDM(t, rig, msgs[1], alice, thread2, "and a second line")
	require.Equal(t, thread, thread2, "one user's DMs share a thread")
	require.NotEqual(t, msgs[0].PlatformMessageID, msgs[1].PlatformMessageID, "PlatformMessageID must differ between messages")
	require.Equal(t, thread, rig.ThreadOf(t, alice), "ThreadOf(user) must be the thread of the user's DM")
}

func testInboundDMTwoUsers(t *testing.T, rig *Rig) {
	alice, bob := needTwoUsers(t, rig)
	h := begin(t, rig)
	ta := rig.DM(t, alice, "from Alice")
	h.rec.Wait(t, 1, waitFor)
	tb := rig.DM(t, bob, "from Bob")
	msgs := h.rec.Wait(t, 2, waitFor)
	require.Len(t, msgs, 2)
	requireDM(t, rig, msgs[0], alice, ta, "from Alice")
	requireDM(t, rig, msgs[1], bob, tb, "from Bob")
	require.NotEqual(t, ta, tb, "two users must have their own threads")
	require.Equal(t, ta, rig.ThreadOf(t, alice))
	require.Equal(t, tb, rig.ThreadOf(t, bob))
}

// requireIgnored plays something the adapter must drop, then a DM as the
// sentinel: the DM arriving alone proves the earlier event was dropped
// rather than merely slow, and stopping (which ends the adapter's
// background work) proves nothing trails behind.
func requireIgnored(t *testing.T, rig *Rig, what string, play func(t *testing.T, h *harness, user User)) {
	t.Helper()
	h := begin(t, rig)
	alice := users(rig)[0]
	play(t, h, alice)
	before := len(h.rec.Messages())
	thread := rig.DM(t, alice, "sentinel DM")
	msgs := h.rec.Wait(t, before+1, waitFor)
	require.Len(t, msgs, before+1, "%s reached the core", what)
	requireDM(t, rig, msgs[before], alice, thread, "sentinel DM")
	h.stop(t)
	require.Len(t, h.rec.Messages(), before+1, "%s reached the core after the sentinel", what)
}

func testIgnoredGroup(t *testing.T, rig *Rig) {
	if rig.Group == nil {
		t.Skip("adaptertest: the platform has no group chats (Rig.Group is nil)")
	}
	requireIgnored(t, rig, "a group message", func(t *testing.T, _ *harness, u User) {
		rig.Group(t, u, "hello group, is the bot here?")
	})
}

func testIgnoredChannel(t *testing.T, rig *Rig) {
	if rig.Channel == nil {
		t.Skip("adaptertest: the platform has no channels (Rig.Channel is nil)")
	}
	requireIgnored(t, rig, "a channel post", func(t *testing.T, _ *harness, _ User) {
		rig.Channel(t, "channel announcement")
	})
}

func testIgnoredOwn(t *testing.T, rig *Rig) {
	if rig.Own == nil {
		t.Skip("adaptertest: the platform never echoes the bot's own messages (Rig.Own is nil)")
	}
	requireIgnored(t, rig, "the bot's own message", func(t *testing.T, _ *harness, _ User) {
		rig.Own(t, "something the bot said")
	})
}

func testIgnoredEdit(t *testing.T, rig *Rig) {
	if rig.Edit == nil {
		t.Skip("adaptertest: the platform has no message edits (Rig.Edit is nil)")
	}
	requireIgnored(t, rig, "an edited DM", func(t *testing.T, h *harness, u User) {
		h.greet(t, u)
		rig.Edit(t, u, "hello, edited")
	})
}
