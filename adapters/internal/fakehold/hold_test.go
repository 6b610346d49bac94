package fakehold

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHeldUntilReleasedOrGone(t *testing.T) {
	changed := make(chan struct{}, 4)
	closed := make(chan struct{})
	h := New(func() { changed <- struct{}{} }, closed)
	require.True(t, h.Wait("sendVoice", nil), "not held: answered at once")
	require.Zero(t, h.Held("sendVoice"))

	h.Hold("sendVoice")
	done := make(chan bool)
	go func() { done <- h.Wait("sendVoice", nil) }()
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("holding was not signalled")
	}
	require.Equal(t, 1, h.Held("sendVoice"))
	h.Release("sendVoice")
	require.True(t, <-done, "released: answered")

	h.Hold("messages")
	gone := make(chan struct{})
	go func() { done <- h.Wait("messages", gone) }()
	<-changed
	close(gone)
	require.False(t, <-done, "the client went away: no answer")
	require.True(t, h.Wait("other", nil))

	go func() { done <- h.Wait("messages", nil) }()
	<-changed
	close(closed)
	require.False(t, <-done, "the fake closed: no answer")
}
