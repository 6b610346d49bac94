package spool_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/diskfault/diskfaulttest"
	"github.com/parleybot/parley/spool"
)

// errDiskFull is what the store answers on a full disk.
var errDiskFull = fmt.Errorf("recording inbound message: sqlite /data/parley.db: the disk holding /data is full: %w",
	core.ErrStoreUnavailable)

// The database's disk is full while the spool's is not: the store's write
// probe still passes (a one-row upsert fits where inserts do not), but
// the store says it cannot take writes, so no spooled message is given
// up however long it lasts; once there is room, each reaches the core
// once, in order.
func TestAStoreThatCannotWriteIsTriedUntilItCan(t *testing.T) {
	t.Parallel()
	c := &fakeCore{downErr: errDiskFull}
	c.setDown(true)
	s := open(t, t.TempDir(), c, spool.Config{Probe: func(ctx context.Context) error { return nil }})
	s.Start(t.Context())
	defer stop(t, s)
	for i := range 5 {
		for _, th := range []string{"a", "b"} {
			require.NoError(t, s.HandleInbound(t.Context(), msg(th, i)))
		}
	}
	// Many times the tries after which a bad message is given up.
	calls := c.calls.Load()
	require.Eventually(t, func() bool { return c.calls.Load() > calls+20 }, waitFor, time.Millisecond)
	require.Empty(t, c.messages())
	c.setDown(false)
	requireInOrder(t, c.waitFor(t, 10), 2, 5)
	require.Eventually(t, func() bool { return !s.State().Spooling }, waitFor, time.Millisecond)
}

// The disk holding the spool fills up while the store cannot take
// messages: the message already taken stays in memory (it was lost), the
// spool's health fails with the first failed write (it said ok), and new
// messages are refused with an error that says to try again later rather
// than taken and dropped. Once there is room, and then a store, every
// message taken reaches the core once, in order.
func TestASpoolThatCannotWriteRefusesAndLosesNothing(t *testing.T) {
	t.Parallel()
	for _, storeFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("store back first=%v", storeFirst), func(t *testing.T) {
			t.Parallel()
			disk := diskfaulttest.New(t, "1m")
			c := &fakeCore{downErr: errDiskFull}
			c.setDown(true)
			s := open(t, disk.Dir, c, spool.Config{Disk: disk.Fault})
			s.Start(t.Context())
			defer stop(t, s)
			disk.Fill(t)

			require.NoError(t, s.HandleInbound(t.Context(), msg("a", 0)), "taken: the store has not failed yet")
			require.Eventually(t, func() bool { return s.Health() != nil }, waitFor, time.Millisecond,
				"health passed while the spool could not write")
			require.ErrorContains(t, s.Health(), "cannot write")
			require.Equal(t, 1, s.State().Queued, "kept in memory")

			for _, m := range []core.InboundMessage{msg("a", 1), msg("b", 0)} {
				err := s.HandleInbound(t.Context(), m)
				require.ErrorIs(t, err, core.ErrStoreUnavailable, "refused, to be tried again later")
				require.ErrorContains(t, err, "no space left on device")
			}

			if storeFirst {
				c.setDown(false)
				require.Equal(t, "a #0", c.waitFor(t, 1)[0].Text, "handed straight over: none of its conversation is in the file")
				disk.Free(t)
			} else {
				disk.Free(t)
				require.Eventually(t, func() bool { st := s.State(); return st.Queued == 0 && st.Bytes > 0 }, waitFor,
					time.Millisecond, "moved to the file once there is room")
				require.NoError(t, s.Health())
				c.setDown(false)
			}
			for _, m := range []core.InboundMessage{msg("a", 1), msg("b", 0), msg("a", 2)} {
				require.NoError(t, s.HandleInbound(t.Context(), m))
			}
			got := c.waitFor(t, 4)
			require.Eventually(t, func() bool { return !s.State().Spooling && s.Health() == nil }, waitFor, time.Millisecond)
			var a, b []string
			for _, m := range c.messages() {
				if m.ChannelThreadID == "a" {
					a = append(a, m.Text)
				} else {
					b = append(b, m.Text)
				}
			}
			require.Len(t, got, 4)
			require.Equal(t, []string{"a #0", "a #1", "a #2"}, a)
			require.Equal(t, []string{"b #0"}, b)
		})
	}
}
