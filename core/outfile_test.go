package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestFilesNotShown(t *testing.T) {
	t.Parallel()
	files := []core.OutboundFile{
		{Kind: core.AttachImage, Name: "cat.png", Data: make([]byte, 2048)},
		{Kind: core.AttachVoice, Name: "reply.ogg", Data: []byte("ogg")},
	}
	require.Equal(t, "Here you go.\n[image \"cat.png\" (2 KB) cannot be shown here]\n[voice \"reply.ogg\" (3 bytes) cannot be shown here]",
		core.FilesNotShown("Here you go.\n", files))
	require.Equal(t, "[image \"cat.png\" (2 KB) cannot be shown here]", core.FilesNotShown("", files[:1]))
}
