package adaptertest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// The optional interfaces of buttons, reactions and edits
// (docs/adapters.md, "Buttons, reactions and edits"): each case runs when
// the rig has the hook that plays the user's side.

// testTap: a tap on a button of a sent question reaches Host.HandleTap
// with the button's data, the message's platform id and the tapping user,
// and is acknowledged.
func testTap(t *testing.T, rig *Rig) {
	switch {
	case !rig.Adapter.Capabilities().Choices:
		t.Skip("adaptertest: the adapter has no buttons (Capabilities().Choices is false): the core writes choices as numbered lines")
	case rig.Tap == nil:
		t.Skip("adaptertest: the rig cannot tap a button (Rig.Tap is nil)")
	}
	h := begin(t, rig)
	u := users(rig)[0]
	thread := h.greet(t, u)
	res := h.sendMsg(t, core.OutboundMessage{ChannelThreadID: thread, Text: "Tea or coffee?",
		Choices: []core.Choice{{Label: "Tea", Data: "q1.0"}, {Label: "Coffee", Data: "q1.1"}}})
	require.NotEmpty(t, res.PlatformMessageIDs, "adaptertest: the question's platform id")
	id := res.PlatformMessageIDs[len(res.PlatformMessageIDs)-1]
	acked := rig.Tap(t, u, id, "q1.1")
	h.rec.WaitUntil(t, waitFor, "the tap to reach HandleTap", func() bool { return len(h.rec.Taps()) > 0 })
	tap := h.rec.Taps()[0]
	require.NotNil(t, tap.Tap, "adaptertest: HandleTap's message has Tap set")
	require.Equal(t, "q1.1", tap.Tap.Data, "adaptertest: the tapped button's data")
	require.Equal(t, id, tap.Tap.MessageID, "adaptertest: the platform id of the message the button is on")
	require.NotEmpty(t, tap.Tap.ID, "adaptertest: the platform's id of the tap (redeliveries are stored once)")
	require.Equal(t, thread, tap.ChannelThreadID)
	require.Equal(t, u.ID, tap.ChannelUserID)
	require.Equal(t, rig.Adapter.Platform(), tap.Platform)
	require.True(t, tap.Direct, "adaptertest: a tap in a DM is direct")
	require.Len(t, h.rec.Messages(), 1, "adaptertest: a tap is not an inbound message (HandleInbound)")
	if acked == nil {
		t.Log("adaptertest: the platform has no acknowledgement of a tap")
		return
	}
	eventually(t, acked, "the tap was never acknowledged")
}

// testUserEdit: a user's edit of a DM reaches Host.HandleChange with the
// platform id the DM had, and is no new message.
func testUserEdit(t *testing.T, rig *Rig) {
	if rig.EditDM == nil {
		t.Skip("adaptertest: the rig cannot edit a DM (Rig.EditDM is nil)")
	}
	h := begin(t, rig)
	u := users(rig)[0]
	thread := h.greet(t, u)
	id := h.rec.Messages()[0].PlatformMessageID
	require.NotEmpty(t, id, "adaptertest: an inbound message has its platform id")
	rig.EditDM(t, u, id, "hello, edited")
	h.rec.WaitUntil(t, waitFor, "the edit to reach HandleChange", func() bool { return len(h.rec.Changes()) > 0 })
	c := h.rec.Changes()[0]
	require.Equal(t, core.MessageChange{Platform: rig.Adapter.Platform(), ChannelThreadID: thread, ChannelUserID: u.ID,
		PlatformMessageID: id, Text: "hello, edited", At: c.At}, c)
	require.False(t, c.At.IsZero(), "adaptertest: a change has its time")
	require.Len(t, h.rec.Messages(), 1, "adaptertest: an edit is not a new message")
}

// testUserDelete: a user's deletion of a DM reaches Host.HandleChange as
// Deleted, with the platform id the DM had.
func testUserDelete(t *testing.T, rig *Rig) {
	if rig.DeleteDM == nil {
		t.Skip("adaptertest: the platform tells bots of no deletion, or the rig cannot delete (Rig.DeleteDM is nil)")
	}
	h := begin(t, rig)
	u := users(rig)[0]
	thread := h.greet(t, u)
	id := h.rec.Messages()[0].PlatformMessageID
	rig.DeleteDM(t, u, id)
	h.rec.WaitUntil(t, waitFor, "the deletion to reach HandleChange", func() bool { return len(h.rec.Changes()) > 0 })
	c := h.rec.Changes()[0]
	require.True(t, c.Deleted, "adaptertest: %+v is a deletion", c)
	require.Equal(t, id, c.PlatformMessageID)
	require.Equal(t, thread, c.ChannelThreadID)
	require.Equal(t, rig.Adapter.Platform(), c.Platform)
	require.Empty(t, c.Text)
}

// testUserReaction: a user's reaction to a bot message, and taking it
// back, reach Host.HandleReaction; they are no messages.
func testUserReaction(t *testing.T, rig *Rig) {
	if rig.React == nil {
		t.Skip("adaptertest: the rig cannot react (Rig.React is nil)")
	}
	h := begin(t, rig)
	u := users(rig)[0]
	thread := h.greet(t, u)
	res := h.send(t, thread, "How was it?")
	id := res.PlatformMessageIDs[0]
	rig.React(t, u, id, "👍", false)
	h.rec.WaitUntil(t, waitFor, "the reaction to reach HandleReaction", func() bool { return len(h.rec.Reactions()) > 0 })
	rig.React(t, u, id, "👍", true)
	h.rec.WaitUntil(t, waitFor, "the reaction taken back to reach HandleReaction", func() bool { return len(h.rec.Reactions()) > 1 })
	got := h.rec.Reactions()
	require.Len(t, got, 2)
	for i, r := range got {
		require.Equal(t, core.Reaction{Platform: rig.Adapter.Platform(), ChannelThreadID: thread, ChannelUserID: u.ID,
			MessageID: id, Emoji: r.Emoji, Removed: i == 1, At: r.At}, r)
		require.NotEmpty(t, r.Emoji)
	}
	require.Len(t, h.rec.Messages(), 1, "adaptertest: a reaction is not a message")
}

// testBotReacts: core.Reactor puts the bot's reaction on a user's message
// and core.Unreactor takes it back; taking back one not there is no
// error.
func testBotReacts(t *testing.T, rig *Rig) {
	r, ok := rig.Adapter.(core.Reactor)
	switch {
	case !ok:
		t.Skip("adaptertest: the adapter is not a core.Reactor: tool react is not offered")
	case rig.BotReactions == nil:
		t.Skip("adaptertest: the fake cannot show the bot's reactions (Rig.BotReactions is nil)")
	}
	h := begin(t, rig)
	u := users(rig)[0]
	thread := h.greet(t, u)
	id := h.rec.Messages()[0].PlatformMessageID
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, r.React(ctx, thread, id, "👍"), "adaptertest: React")
	eventually(t, func() bool { return len(rig.BotReactions(t, thread, id)) == 1 }, "the bot's reaction never showed: %v", rig.BotReactions(t, thread, id))
	un, ok := rig.Adapter.(core.Unreactor)
	if !ok {
		return
	}
	require.NoError(t, un.Unreact(ctx, thread, id, "👍"), "adaptertest: Unreact")
	eventually(t, func() bool { return len(rig.BotReactions(t, thread, id)) == 0 }, "the bot's reaction stayed: %v", rig.BotReactions(t, thread, id))
	require.NoError(t, un.Unreact(ctx, thread, id, "👍"), "adaptertest: taking back a reaction not there is no error")
}
