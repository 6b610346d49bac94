package llmtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/llmtest"
)

// OggOpusOfSize is a whole stream of at least the size asked, not much
// more, that still says its input.
func TestOggOpusOfSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 10_000, 1 << 20} {
		b := llmtest.OggOpusOfSize("a long story", n)
		require.GreaterOrEqual(t, len(b), n)
		require.Less(t, len(b), n+2*3077+1000)
		in, err := llmtest.SpokenInput(b)
		require.NoError(t, err)
		require.Equal(t, "a long story", in)
	}
}
