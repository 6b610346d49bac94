package nonce

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFor(t *testing.T) {
	t.Parallel()
	require.Equal(t, "run-12.0", For("run-12", 0))
	require.Equal(t, "run-12.10", For("run-12", 10))
	long := "conversation-12345-reply-67890"
	for i := range 120 {
		n := For(long, i)
		require.LessOrEqual(t, len(n), MaxLen)
		require.True(t, strings.HasSuffix(n, "."+strconv.Itoa(i)))
		require.Equal(t, n, For(long, i), "stable")
	}
	require.NotEqual(t, For(long, 0), For(long+"x", 0))
	require.NotEqual(t, RandomKey(), RandomKey())
}
