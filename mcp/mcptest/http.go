package mcptest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool declares a tool for NewHTTPServer and NewSSEServer.
type Tool struct {
	Name        string
	Description string
	// InputSchema is the JSON Schema of the arguments (nil: an object with
	// any properties).
	InputSchema any
	// Handler gets the arguments as decoded JSON. Text returns a plain
	// text result; build an *mcp.CallToolResult for anything else.
	Handler func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)
}

// Text is a tool result holding text.
func Text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// NewServer returns an SDK server offering tools.
func NewServer(tools ...Tool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "v1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}})
	for _, t := range tools {
		schema := t.InputSchema
		if schema == nil {
			schema = map[string]any{"type": "object"}
		}
		h := t.Handler
		s.AddTool(&mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args map[string]any
				if len(req.Params.Arguments) > 0 {
					if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
						return nil, err
					}
				}
				if h == nil {
					return Text(""), nil
				}
				return h(ctx, args)
			})
	}
	return s
}

// NewHTTPServer serves tools over streamable HTTP until the test ends and
// returns the endpoint's URL.
func NewHTTPServer(t testing.TB, tools ...Tool) (url string) {
	t.Helper()
	s := NewServer(tools...)
	return serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// NewSSEServer serves tools over the older SSE transport (protocol
// 2024-11-05) until the test ends and returns the endpoint's URL, for
// testing a client's fallback.
func NewSSEServer(t testing.TB, tools ...Tool) (url string) {
	t.Helper()
	s := NewServer(tools...)
	return serve(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

func serve(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		// Streams a client left open would keep Close waiting.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}
