package probes

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestModelNames(t *testing.T) {
	t.Parallel()
	listed := []string{"gpt-4o", "gpt-4o-mini", "llama3.1:latest", "o3-mini", "text-embedding-3-small", "whisper-1"}
	require.True(t, isListed(listed, "gpt-4o-mini"))
	require.True(t, isListed(listed, "llama3.1"), "Ollama answers to a name without :latest")
	require.False(t, isListed(listed, "llama3.1:8b"))
	require.False(t, isListed(listed, "gpt-4o-mni"))
	require.Equal(t, " (close: gpt-4o-mini, gpt-4o)", closeNames("gpt-4o-mni", listed))
	require.Equal(t, " (close: llama3.1:latest)", closeNames("llama3.2", listed))
	require.Equal(t, "", closeNames("claude-3-opus", listed), "nothing near, and too many to list")
	require.Equal(t, " (it lists a-model, b-model)", closeNames("qwen2.5:7b-instruct", []string{"a-model", "b-model"}))
	require.Equal(t, 3, editDistance("kitten", "sitting"))
}
