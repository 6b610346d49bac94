package adaptertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/parleybot/parley/core"
)

// testTypingConsistent checks Capabilities().Typing against the optional
// interface: a promise of typing needs the method, and a method the
// capabilities disown must at least be harmless.
func testTypingConsistent(t *testing.T, rig *Rig) {
	typing := rig.Adapter.Capabilities().Typing
	ti, ok := rig.Adapter.(core.TypingIndicator)
	switch {
	case typing && !ok:
		t.Fatal("Capabilities().Typing is true but the adapter does not implement core.TypingIndicator")
	case typing || !ok:
		return // consistent; testTyping checks that it works
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, ti.Typing(ctx, thread), "Typing must be harmless when Capabilities().Typing is false")
	require.Empty(t, h.settled(t, thread), "Typing must not send a message")
}

func testTyping(t *testing.T, rig *Rig) {
	ti, ok := rig.Adapter.(core.TypingIndicator)
	if !rig.Adapter.Capabilities().Typing || !ok {
		t.Skip("adaptertest: the adapter shows no typing indicator (Capabilities().Typing is false)")
	}
	if rig.TypingShown == nil {
		t.Skip("adaptertest: the fake platform cannot see typing indications (Rig.TypingShown is nil)")
	}
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	before := rig.TypingShown(t, thread)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, ti.Typing(ctx, thread))
	eventually(t, func() bool { return rig.TypingShown(t, thread) > before },
		"the platform never showed typing in %q", thread)
	require.Empty(t, h.settled(t, thread), "Typing must not send a message")
}

// testStop exercises the adapter (inbound, a reply, typing), stops it and
// requires that Stop is prompt, that no goroutine started since before
// Start survives it, and that a late Send returns instead of hanging.
func testStop(t *testing.T, rig *Rig) {
	leaks := goleak.IgnoreCurrent() // the rig's own goroutines predate Start
	h := begin(t, rig)
	thread := h.greet(t, users(rig)[0])
	res := h.send(t, thread, "one reply before stopping")
	sent := h.settled(t, thread)
	require.Len(t, sent, 1)
	h.checkIDs(t, res, sent)
	if ti, ok := rig.Adapter.(core.TypingIndicator); ok {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		require.NoError(t, ti.Typing(ctx, thread))
		cancel()
	}

	took := h.stop(t)
	require.Less(t, took, stopWithin, "Stop must return promptly")

	done := make(chan error, 1)
	go func() {
		_, err := h.trySend(thread, "sent after Stop")
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("Send after Stop returned %v", err)
	case <-time.After(stopWithin):
		t.Fatal("Send after Stop hangs")
	}

	if rig.Quiesce != nil {
		rig.Quiesce(t)
	}
	goleak.VerifyNone(t, leaks)
}
