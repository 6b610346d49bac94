package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
)

// waitFor is how long a test waits for a condition; poll is how often it
// looks.
const (
	waitFor = 10 * time.Second
	poll    = 5 * time.Millisecond
)

// logRecorder is a slog.Handler keeping every record as one line of text
// (message and all attributes), for assertions on what was logged.
type logRecorder struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, lines: &[]string{}}
}

func (h *logRecorder) logger() *slog.Logger                     { return slog.New(h) }
func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &c
}

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Level, r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	*h.lines = append(*h.lines, b.String())
	h.mu.Unlock()
	return nil
}

// all returns every line logged so far.
func (h *logRecorder) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), *h.lines...)
}

// count returns how many lines contain every one of subs.
func (h *logRecorder) count(subs ...string) int {
	n := 0
	for _, l := range h.all() {
		if containsAll(l, subs...) {
			n++
		}
	}
	return n
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// startManager starts m and stops it when the test ends.
func startManager(t *testing.T, m *Manager) {
	t.Helper()
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, m.Stop(ctx))
	})
}

// memServers builds a Manager whose servers are SDK servers reached over
// in-memory transports, and starts it.
func memManager(t *testing.T, opts Options, servers map[string]*sdk.Server) *Manager {
	t.Helper()
	for name := range servers {
		found := false
		for _, s := range opts.Servers {
			found = found || s.Name == name
		}
		if !found {
			opts.Servers = append(opts.Servers, Server{Name: name, Command: "in-memory"})
		}
	}
	m, err := New(opts)
	require.NoError(t, err)
	m.dialHook = func(ctx context.Context, name string) (sdk.Transport, error) {
		srv := servers[name]
		if srv == nil {
			return nil, fmt.Errorf("no server %q", name)
		}
		st, ct := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	startManager(t, m)
	return m
}

// newSDKServer returns an SDK server that declares tools, so that tools
// added later are announced.
func newSDKServer() *sdk.Server {
	return sdk.NewServer(&sdk.Implementation{Name: "test", Version: "v1"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}})
}

// addTool adds a tool with a raw JSON schema and handler.
func addTool(s *sdk.Server, name, schema string, h func(ctx context.Context, args map[string]any) (*sdk.CallToolResult, error)) {
	s.AddTool(&sdk.Tool{Name: name, Description: "the " + name + " tool", InputSchema: json.RawMessage(schema)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args map[string]any
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return h(ctx, args)
		})
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func waitState(t *testing.T, m *Manager, name string, ok func(string) bool) {
	t.Helper()
	require.Eventually(t, func() bool { return ok(m.State(name)) }, waitFor, poll,
		"server %s: last state %q", name, m.State(name))
}

func isOK(s string) bool   { return s == StateOK }
func isDown(s string) bool { return strings.HasPrefix(s, stateDown) }

// tools returns the tools offered now, by name.
func toolsByName(t *testing.T, m *Manager) map[string]llm.Tool {
	t.Helper()
	ts, err := m.Tools(context.Background(), nil)
	require.NoError(t, err)
	out := map[string]llm.Tool{}
	for _, tool := range ts {
		out[tool.Name] = tool
	}
	return out
}

// tool returns the tool offered as name, failing the test if there is none.
func tool(t *testing.T, m *Manager, name string) llm.Tool {
	t.Helper()
	tl, ok := toolsByName(t, m)[name]
	require.True(t, ok, "no tool %s among %v", name, toolNames(t, m))
	return tl
}

func toolNames(t *testing.T, m *Manager) []string {
	var names []string
	for n := range toolsByName(t, m) {
		names = append(names, n)
	}
	return names
}

func call(tl llm.Tool, args string) (llm.ToolOutput, error) {
	return tl.CallRich(context.Background(), json.RawMessage(args))
}

// observed records Observe's reports.
type observed struct {
	mu    sync.Mutex
	calls []string // "server tool outcome"
}

func (o *observed) observe(server, tool, outcome string, _ time.Duration) {
	o.mu.Lock()
	o.calls = append(o.calls, server+" "+tool+" "+outcome)
	o.mu.Unlock()
}

func (o *observed) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.calls...)
}
