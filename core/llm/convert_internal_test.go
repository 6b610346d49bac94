package llm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Converting a text-only message is on every model call's path: parts must
// add no allocation there.
// (Not parallel: AllocsPerRun refuses to run in a parallel test.)
func TestTextOnlyMessageConversionDoesNotAllocate(t *testing.T) {
	m := Message{Role: RoleUser, Content: "hello", Name: "bob"}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = toOpenAIMessage(m) }))
}
