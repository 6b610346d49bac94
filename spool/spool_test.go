package spool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/spool"
)

const waitFor = 10 * time.Second

// core is a stand-in for the dispatcher: it records the messages it takes
// while up, fails while down, and can hold a hand-over until released.
type fakeCore struct {
	// No history, model health or commands: a host that takes messages.
	core.InboundOnly
	mu   sync.Mutex
	down bool
	// downErr is what a down core answers (default: database is locked).
	downErr error
	got     []core.InboundMessage
	seen    map[string]bool
	calls   atomic.Int64
	// hold, when set, blocks hand-overs until it is closed.
	hold chan struct{}
}

func (c *fakeCore) HandleInbound(ctx context.Context, m core.InboundMessage) error {
	c.calls.Add(1)
	c.mu.Lock()
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down && c.downErr != nil {
		return c.downErr
	}
	if c.down {
		return errors.New("database is locked")
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if c.seen[m.PlatformMessageID] {
		return nil // the store drops a redelivery
	}
	c.seen[m.PlatformMessageID] = true
	c.got = append(c.got, m)
	return nil
}

func (c *fakeCore) setDown(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
}

func (c *fakeCore) messages() []core.InboundMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]core.InboundMessage(nil), c.got...)
}

func (c *fakeCore) waitFor(t *testing.T, n int) []core.InboundMessage {
	t.Helper()
	require.Eventually(t, func() bool { return len(c.messages()) >= n }, waitFor, 2*time.Millisecond,
		"the core never got %d messages", n)
	return c.messages()
}

func msg(thread string, i int) core.InboundMessage {
	return core.InboundMessage{Platform: "discord", ChannelThreadID: thread, ChannelUserID: "u-" + thread,
		Text: fmt.Sprintf("%s #%d", thread, i), PlatformMessageID: fmt.Sprintf("%s-%d", thread, i), Direct: true,
		Attachments: []core.Attachment{{Kind: core.AttachImage, Name: "a.png", Size: int64(i)}}}
}

func open(t *testing.T, dir string, next core.Host, cfg spool.Config) *spool.Spool {
	t.Helper()
	cfg.Dir = dir
	if cfg.RetryMin == 0 {
		cfg.RetryMin, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	}
	s, err := spool.Open(cfg, next)
	require.NoError(t, err)
	return s
}

func stop(t *testing.T, s *spool.Spool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	require.NoError(t, s.Stop(ctx))
}

// requireInOrder checks that every conversation's messages came once, in
// the order they were sent.
func requireInOrder(t *testing.T, got []core.InboundMessage, threads, each int) {
	t.Helper()
	require.Len(t, got, threads*each)
	next := map[string]int{}
	for _, m := range got {
		want := fmt.Sprintf("%s #%d", m.ChannelThreadID, next[m.ChannelThreadID])
		require.Equal(t, want, m.Text, "out of order in %s", m.ChannelThreadID)
		require.Len(t, m.Attachments, 1, "attachments survive the spool")
		next[m.ChannelThreadID]++
	}
}

func TestMessagesPassStraightThroughWhileTheStoreIsUp(t *testing.T) {
	t.Parallel()
	c := &fakeCore{}
	s := open(t, t.TempDir(), c, spool.Config{})
	s.Start(t.Context())
	defer stop(t, s)
	for i := range 20 {
		for _, th := range []string{"a", "b", "c"} {
			require.NoError(t, s.HandleInbound(t.Context(), msg(th, i)))
		}
	}
	requireInOrder(t, c.waitFor(t, 60), 3, 20)
	require.False(t, s.State().Spooling)
	st, err := os.Stat(s.Path())
	require.NoError(t, err)
	require.Zero(t, st.Size(), "nothing touched the file")
}

// The adapter's goroutine never waits on the store: a hand-over that
// hangs holds up neither the caller nor other conversations.
func TestACallerNeverWaitsOnTheStore(t *testing.T) {
	t.Parallel()
	c := &fakeCore{hold: make(chan struct{})}
	s := open(t, t.TempDir(), c, spool.Config{})
	s.Start(t.Context())
	defer stop(t, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			_ = s.HandleInbound(t.Context(), msg("slow", i))
		}
	}()
	select {
	case <-done:
	case <-time.After(waitFor):
		t.Fatal("HandleInbound waited on a hanging store")
	}
	require.Equal(t, 50, s.State().Queued)
	close(c.hold)
	requireInOrder(t, c.waitFor(t, 50), 1, 50)
}

// The store goes down: messages go to the file, in order per
// conversation, and reach the core once it is back.
func TestAStoreOutageLosesNothingAndKeepsOrder(t *testing.T) {
	t.Parallel()
	c := &fakeCore{}
	c.setDown(true)
	s := open(t, t.TempDir(), c, spool.Config{})
	s.Start(t.Context())
	defer stop(t, s)
	for i := range 10 {
		for th := range 10 {
			require.NoError(t, s.HandleInbound(t.Context(), msg(fmt.Sprintf("t%d", th), i)))
		}
	}
	require.Eventually(t, func() bool { st := s.State(); return st.Spooling && st.Queued == 0 }, waitFor, time.Millisecond)
	require.Empty(t, c.messages())
	require.Positive(t, s.State().Bytes)
	// The drain keeps trying the oldest message while the store is down.
	calls := c.calls.Load()
	require.Eventually(t, func() bool { return c.calls.Load() > calls+3 }, waitFor, time.Millisecond)
	c.setDown(false)
	requireInOrder(t, c.waitFor(t, 100), 10, 10)
	require.Eventually(t, func() bool { return !s.State().Spooling }, waitFor, time.Millisecond)
	// Back to handing over directly.
	require.NoError(t, s.HandleInbound(t.Context(), msg("t0", 10)))
	c.waitFor(t, 101)
	st, err := os.Stat(s.Path())
	require.NoError(t, err)
	require.Zero(t, st.Size(), "the drained file was emptied")
}

// A crash (the process gone without Stop) leaves the file: the next
// process hands its messages over first, and cuts a torn last record.
func TestSpooledMessagesOutliveTheProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := &fakeCore{}
	c.setDown(true)
	first := open(t, dir, c, spool.Config{})
	for i := range 5 {
		require.NoError(t, first.HandleInbound(t.Context(), msg("x", i)), "before Start: spooled")
	}
	require.Equal(t, int64(0), c.calls.Load())
	// The process dies: its lock goes with it (Stop releases it here),
	// and a torn record is left at the end.
	stop(t, first)
	f, err := os.OpenFile(filepath.Join(dir, "inbound.spool"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte{0, 0, 0, 40, 1, 2})
	require.NoError(t, err)
	require.NoError(t, f.Close())

	c.setDown(false)
	second := open(t, dir, c, spool.Config{})
	require.True(t, second.State().Spooling)
	second.Start(t.Context())
	require.NoError(t, second.HandleInbound(t.Context(), msg("x", 5)), "after the older ones")
	requireInOrder(t, c.waitFor(t, 6), 1, 6)
	stop(t, second)
}

// Two processes on one directory each hold a file of their own.
func TestTwoProcessesShareADirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := open(t, dir, &fakeCore{}, spool.Config{})
	b := open(t, dir, &fakeCore{}, spool.Config{})
	require.NotEqual(t, a.Path(), b.Path())
	stop(t, a)
	stop(t, b)
}

// A full spool refuses (the message is lost, loudly) and fails health;
// the spool recovers once the store takes what it holds.
func TestAFullSpoolSaysSo(t *testing.T) {
	t.Parallel()
	c := &fakeCore{}
	c.setDown(true)
	s := open(t, t.TempDir(), c, spool.Config{MaxBytes: 2048})
	s.Start(t.Context())
	defer stop(t, s)
	var refused error
	for i := 0; i < 100 && refused == nil; i++ {
		if err := s.HandleInbound(t.Context(), msg("f", i)); err != nil {
			refused = err
		}
		require.Eventually(t, func() bool { return s.State().Queued == 0 }, waitFor, time.Millisecond)
	}
	require.ErrorIs(t, refused, spool.ErrFull)
	require.ErrorContains(t, s.Health(), "is full")
	c.setDown(false)
	require.Eventually(t, func() bool { return s.Health() == nil && !s.State().Spooling }, waitFor, time.Millisecond)
}

// A message the store refuses while it is up (it answers its probe) is
// given up after a few tries instead of holding up the rest.
func TestAPoisonMessageIsGivenUp(t *testing.T) {
	t.Parallel()
	c := &poisonCore{fakeCore: &fakeCore{}}
	s := open(t, t.TempDir(), c, spool.Config{Probe: func(context.Context) error { return nil }})
	s.Start(t.Context())
	defer stop(t, s)
	require.NoError(t, s.HandleInbound(t.Context(), msg("p", 0)))
	m := msg("p", 1)
	m.Text = "poison"
	require.NoError(t, s.HandleInbound(t.Context(), m))
	require.NoError(t, s.HandleInbound(t.Context(), msg("p", 2)))
	got := c.waitFor(t, 2)
	require.Equal(t, []string{"p #0", "p #2"}, []string{got[0].Text, got[1].Text})
}

type poisonCore struct{ *fakeCore }

func (c *poisonCore) HandleInbound(ctx context.Context, m core.InboundMessage) error {
	if m.Text == "poison" {
		return errors.New("value too long")
	}
	return c.fakeCore.HandleInbound(ctx, m)
}
