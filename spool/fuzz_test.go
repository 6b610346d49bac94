package spool_test

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/spool"
)

// record is one well-formed spool record of payload.
func record(payload string) []byte {
	rec := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint32(rec[:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(rec[4:8], crc32.Checksum([]byte(payload), crc32.MakeTable(crc32.Castagnoli)))
	copy(rec[8:], payload)
	return rec
}

// FuzzOpen: whatever a crash or a disk left in the spool file and its
// offset, opening it neither panics nor hands over a damaged message, and
// the spool works afterwards.
func FuzzOpen(f *testing.F) {
	good := record(`{"Platform":"discord","ChannelThreadID":"c1","Text":"hi","PlatformMessageID":"m1","Direct":true}`)
	f.Add(good, []byte{})
	f.Add(append(append([]byte{}, good...), good[:11]...), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(append(append([]byte{}, good...), record("not json")...), []byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}, []byte{0, 0, 0, 0, 0, 0, 0, 9})
	f.Add(good, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data, offset []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "inbound.spool"), data, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "inbound.spool.offset"), offset, 0o600))
		c := &fakeCore{}
		s, err := spool.Open(spool.Config{Dir: dir}, c)
		require.NoError(t, err)
		st, err := os.Stat(s.Path())
		require.NoError(t, err)
		require.LessOrEqual(t, st.Size(), int64(len(data)), "opening only ever cuts a torn tail")
		s.Start(t.Context())
		require.NoError(t, s.HandleInbound(t.Context(), msg("after", 0)))
		var got []core.InboundMessage
		require.Eventually(t, func() bool {
			got = c.messages()
			return len(got) > 0 && got[len(got)-1].Text == "after #0"
		}, waitFor, time.Millisecond, "the new message never came after the spooled ones")
		for _, m := range got {
			require.NotEmpty(t, m.PlatformMessageID, "only whole records are handed over")
		}
		stop(t, s)
	})
}
