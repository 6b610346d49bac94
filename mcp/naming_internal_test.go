package mcp

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	cases := []struct{ server, tool, want string }{
		{"files", "read", "files__read"},
		{"files", "read-file_2", "files__read-file_2"},
		{"files", "read.file", "files__read_file"},
		{"files", "lire/écrire", "files__lire__crire"}, // one "_" per character, not per byte
		{"files", "a b\tc", "files__a_b_c"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, toolName(c.server, c.tool), "%s %s", c.server, c.tool)
	}

	got := toolName("files", long)
	require.Len(t, got, 64)
	require.Regexp(t, openAIName, got)
	require.Equal(t, ("files__" + long)[:55]+"_", got[:56], "keeps the first 55 characters")
	require.Equal(t, got, toolName("files", long), "deterministic")
	require.NotEqual(t, got, toolName("files", long+"y"), "the hash tells long names apart")

	exactly64 := strings.Repeat("y", 64-len("files__"))
	require.Equal(t, "files__"+exactly64, toolName("files", exactly64), "64 characters fit")
}

func TestUniqueName(t *testing.T) {
	t.Parallel()
	a, b := uniqueName("s", "a.b"), uniqueName("s", "a/b")
	require.NotEqual(t, a, b)
	require.Regexp(t, openAIName, a)
	require.True(t, strings.HasPrefix(a, "s__a_b_"), a)
}
