package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/mcp/mcptest"
)

var greet = mcptest.Tool{
	Name:        "greet",
	Description: "Greets someone.",
	InputSchema: map[string]any{"type": "object", "properties": map[string]any{"who": map[string]any{"type": "string"}}, "required": []string{"who"}},
	Handler: func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
		return mcptest.Text(fmt.Sprintf("hello, %v", args["who"])), nil
	},
}

func TestHTTPStreamable(t *testing.T) {
	t.Parallel()
	url := mcptest.NewHTTPServer(t, greet)
	m := newStdioManager(t, Options{Servers: []Server{{Name: "web", URL: url}}})
	waitState(t, m, "web", isOK)
	out, err := call(tool(t, m, "web__greet"), `{"who":"Ann"}`)
	require.NoError(t, err)
	require.Equal(t, "hello, Ann", out.Text)
	_, err = call(tool(t, m, "web__greet"), `{}`)
	require.ErrorContains(t, err, `missing properties: ["who"]`)
	n, err := m.Probe(context.Background(), "web")
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

func TestHTTPHeaders(t *testing.T) {
	t.Parallel()
	const token = "Bearer very-secret-token"
	var mu sync.Mutex
	seen := map[string]bool{}
	s := mcptest.NewServer(greet)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method+" "+r.Header.Get("Authorization")] = true
		mu.Unlock()
		if r.Header.Get("Authorization") != token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })

	m := newStdioManager(t, Options{Servers: []Server{
		{Name: "authed", URL: srv.URL, Headers: map[string]string{"Authorization": token}},
		{Name: "anon", URL: srv.URL + "?key=another-secret-key"},
	}, RestartMin: time.Minute})
	waitState(t, m, "authed", isOK)
	out, err := call(tool(t, m, "authed__greet"), `{"who":"Bo"}`)
	require.NoError(t, err)
	require.Equal(t, "hello, Bo", out.Text)
	mu.Lock()
	require.True(t, seen["POST "+token])
	mu.Unlock()

	// A 401 is not taken for "no streamable HTTP here", and the URL's
	// secrets are not in the reason.
	waitState(t, m, "anon", isDown)
	require.Contains(t, m.State("anon"), "initialize failed")
	require.NotContains(t, m.State("anon"), "another-secret-key")
	require.NotContains(t, m.State("anon"), "SSE")
}

func TestHTTPFallsBackToSSE(t *testing.T) {
	t.Parallel()
	url := mcptest.NewSSEServer(t, greet)
	m := newStdioManager(t, Options{Servers: []Server{{Name: "old", URL: url}}})
	waitState(t, m, "old", isOK)
	out, err := call(tool(t, m, "old__greet"), `{"who":"Cy"}`)
	require.NoError(t, err)
	require.Equal(t, "hello, Cy", out.Text)
}

func TestHTTPUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/mcp?token=hidden-token-value"
	srv.Close() // nothing listens there now
	m := newStdioManager(t, Options{Servers: []Server{{Name: "gone", URL: url}}, RestartMin: time.Minute})
	waitState(t, m, "gone", isDown)
	require.Contains(t, m.State("gone"), "connection refused")
	require.NotContains(t, m.State("gone"), "hidden-token-value")
	_, err := m.Probe(context.Background(), "gone")
	require.ErrorContains(t, err, "mcp: gone: initialize failed")
	require.NotContains(t, err.Error(), "hidden-token-value")
}
