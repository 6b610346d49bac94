package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/mcp/mcptest"
)

// TestEverythingServer checks interoperability with the official reference
// server, over stdio.
func TestEverythingServer(t *testing.T) {
	t.Parallel()
	command, args := mcptest.EverythingServer(t)
	m := newStdioManager(t, Options{
		Servers: []Server{{Name: "everything", Command: command, Args: args}},
		Vision:  true,
	})
	waitState(t, m, "everything", isOK)
	names := toolsByName(t, m)
	require.Contains(t, names, "everything__echo")
	require.Contains(t, names, "everything__get-sum")

	out, err := call(names["everything__echo"], `{"message":"hello from parley"}`)
	require.NoError(t, err)
	require.Contains(t, out.Text, "hello from parley")

	out, err = call(names["everything__get-sum"], `{"a":2,"b":40}`)
	require.NoError(t, err)
	require.Contains(t, out.Text, "42")
	_, err = call(names["everything__get-sum"], `{"a":"two"}`)
	require.ErrorContains(t, err, "invalid arguments for everything__get-sum")

	if img, ok := names["everything__get-tiny-image"]; ok {
		out, err = call(img, `{}`)
		require.NoError(t, err)
		require.NotEmpty(t, out.Images)
		require.True(t, strings.HasPrefix(out.Images[0], "data:image/png;base64,"), out.Images[0][:40])
	}
	if sc, ok := names["everything__get-structured-content"]; ok {
		out, err = call(sc, `{"location":"New York"}`)
		require.NoError(t, err)
		require.NotEmpty(t, out.Text)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := m.Probe(ctx, "everything")
	require.NoError(t, err)
	require.Equal(t, len(names), n)
}
