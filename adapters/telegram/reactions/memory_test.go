package reactions_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/reactions"
)

func TestMemory(t *testing.T) {
	t.Parallel()
	var m reactions.Memory
	require.False(t, m.Replaced("1:2", "👀"), "nothing known: not replaced")
	m.Set("1:2", "👀")
	require.False(t, m.Replaced("1:2", "👀"))
	m.Set("1:2", "👍")
	require.True(t, m.Replaced("1:2", "👀"), "the model's reaction replaced the acknowledgement")
	for i := range 1024 {
		m.Set(fmt.Sprint("x:", i), "👍")
	}
	require.False(t, m.Replaced("1:2", "👀"), "the oldest is forgotten")
}
