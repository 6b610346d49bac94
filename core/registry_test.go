package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestRegistryPanicsOnDuplicateAndEmptyNames(t *testing.T) {
	t.Parallel()
	r := core.NewRegistry[int]("widget")
	r.Register("a", 1)
	r.Register("b", 2)
	require.PanicsWithValue(t, `parley: widget "a" registered twice`, func() { r.Register("a", 3) })
	require.PanicsWithValue(t, "parley: widget registered with an empty name", func() { r.Register("", 4) })
	v, ok := r.Lookup("a")
	require.True(t, ok)
	require.Equal(t, 1, v, "a duplicate does not replace the first")
	_, ok = r.Lookup("zzz")
	require.False(t, ok)
	require.Equal(t, []string{"a", "b"}, r.Names())
}
