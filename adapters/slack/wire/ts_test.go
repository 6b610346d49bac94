package wire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTS(t *testing.T) {
	t.Parallel()
	fallback := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, time.Unix(1700000000, 100000).UTC(), ParseTS("1700000000.000100", fallback))
	require.Equal(t, time.Unix(1700000000, 0).UTC(), ParseTS("1700000000", fallback))
	require.Equal(t, time.Unix(1700000000, 500000000).UTC(), ParseTS("1700000000.5", fallback))
	for _, bad := range []string{"", "abc", "-5.000001", "17.x"} {
		require.Equal(t, fallback, ParseTS(bad, fallback), bad)
	}
}
