package schedule_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/plugins/schedule"
)

func TestParseSendAt(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, tc := range []struct {
		in   string
		loc  *time.Location
		want string // UTC
	}{
		{"2026-11-24T09:00:00+01:00", berlin, "2026-11-24T08:00:00Z"},
		{"2026-11-24T09:00:00Z", ny, "2026-11-24T09:00:00Z"},
		{"2026-11-24 09:00", berlin, "2026-11-24T08:00:00Z"},
		{"2026-07-24 09:00", berlin, "2026-07-24T07:00:00Z"}, // summer time
		{"2026-11-24 09:00:30", ny, "2026-11-24T14:00:30Z"},
		{" 2026-11-24T09:00 ", ny, "2026-11-24T14:00:00Z"},
		{"2026-03-08 02:30", ny, "2026-03-08T07:00:00Z"}, // in the spring-forward gap: 03:00 EDT, right after the jump
		{"2026-11-01 01:30", ny, "2026-11-01T05:30:00Z"},
		{"2026-03-29 02:30", berlin, "2026-03-29T01:00:00Z"}, // Berlin's gap: 03:00 CEST
		{"2026-10-25 02:30", berlin, "2026-10-25T00:30:00Z"}, // Berlin's repeated hour: the first // the repeated hour: the first one
	} {
		got, err := schedule.ParseSendAt(tc.in, tc.loc)
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got.UTC().Format(time.RFC3339), tc.in)
	}
	for _, bad := range []string{"tomorrow", "2026-11-24", "24.11.2026 09:00", "2026-13-01 09:00", ""} {
		_, err := schedule.ParseSendAt(bad, berlin)
		require.ErrorContains(t, err, "is not a time", bad)
	}
}
