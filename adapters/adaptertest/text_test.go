package adaptertest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/textsplit"
)

// TestLongText checks the long-text builder against textsplit.Split at the
// limits of real platforms: several parts, the code block whole, and the
// reassembly check accepting the result.
func TestLongText(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{100, 2000, 4096, 16000, 40000} {
		t.Run(strconv.Itoa(limit), func(t *testing.T) {
			t.Parallel()
			text, code := longText(limit)
			parts := textsplit.Split(text, limit)
			require.GreaterOrEqual(t, len(parts), 2)
			require.Equal(t, text, strings.Join(parts, ""))
			sent := make([]Sent, len(parts))
			whole := 0
			for i, p := range parts {
				sent[i] = Sent{Text: p}
				if strings.Contains(p, code) {
					whole++
				}
			}
			require.Equal(t, 1, whole, "code block %q", code)
			requireReassembles(t, text, sent)
		})
	}
}

// TestTwoParts checks that the rate-limit text splits in exactly two.
func TestTwoParts(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{100, 2000, 4096, 16000} {
		require.Len(t, textsplit.Split(twoParts(limit), limit), 2, "limit %d", limit)
	}
}
