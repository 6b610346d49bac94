package wire_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/wire"
)

func TestJSONPointers(t *testing.T) {
	t.Parallel()
	require.Equal(t, "/blocks/0/text /blocks/1", wire.JSONPointers([]string{
		"[ERROR] must be more than 0 characters [json-pointer:/blocks/0/text]",
		"[ERROR] unsupported type [json-pointer:/blocks/1]",
	}))
	require.Empty(t, wire.JSONPointers([]string{"[ERROR] something else"}))
	require.Empty(t, wire.JSONPointers(nil))
}
