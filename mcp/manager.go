package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/llm"
)

// Defaults of Options and Server.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxResultChars = 16000
	DefaultInitTimeout    = 30 * time.Second
	DefaultRestartMin     = time.Second
	DefaultRestartMax     = time.Minute
)

// Server is one configured MCP server: Command (+Args, Env) for stdio, or
// URL (+Headers) for streamable HTTP with SSE fallback.
type Server struct {
	Name    string
	Command string
	Args    []string
	// Env is added to the process's environment (os.Environ() + these).
	// Values are secrets: never logged, never in an error.
	Env map[string]string
	URL string
	// Headers go with every HTTP request. Values are secrets.
	Headers map[string]string
	// Tools is an allow-list of the server's own tool names (empty: all).
	Tools []string
	// OwnersOnly offers the server's tools in the owners' conversations
	// only (Options.Gate names them).
	OwnersOnly bool
	// Allow names, per tool (the server's own name), who it is offered
	// to: "owners" and "platform:user_id"; a tool not in it, everyone.
	Allow map[string][]string
	// Timeout bounds one tool call (default 30s).
	Timeout time.Duration
}

// Options configure a Manager.
type Options struct {
	Servers []Server
	Logger  *slog.Logger
	// Gate names the bot's owners, for OwnersOnly and Allow's "owners".
	Gate *access.Gate
	// Vision: image content goes to the model as images
	// (llm.ToolOutput.Images as data URLs); off: a text note says an image
	// was returned that the model cannot see.
	Vision bool
	// MaxResultChars caps the text of one result (default 16000); a cut
	// result ends with a note saying it was cut and how long it was.
	MaxResultChars int
	// Observe, when set, is told of every tool call: server name, the
	// server's tool name, outcome, duration. Outcomes: "ok", "tool_error"
	// (the result had isError), "invalid_arguments", "timeout",
	// "unavailable" (server down), "failed" (protocol/transport error).
	Observe func(server, tool, outcome string, d time.Duration)
	// InitTimeout bounds connecting + initialize + first tools/list
	// (default 30s).
	InitTimeout time.Duration
	// RestartMin and RestartMax bound the exponential backoff between
	// reconnects of a server that died or failed to start (defaults 1s and
	// 1m).
	RestartMin, RestartMax time.Duration
}

// Outcomes reported to Options.Observe.
const (
	OutcomeOK               = "ok"
	OutcomeToolError        = "tool_error"
	OutcomeInvalidArguments = "invalid_arguments"
	OutcomeTimeout          = "timeout"
	OutcomeUnavailable      = "unavailable"
	OutcomeFailed           = "failed"
)

// States reported by Manager.State (a down server's state is "down: " and
// a short reason).
const (
	StateStarting = "starting"
	StateOK       = "ok"
	stateDown     = "down: "
)

// Manager runs the configured MCP servers and offers their tools to the
// model. It is a core.Plugin, a core.ToolProvider and a core.Service.
type Manager struct {
	opts    Options
	log     *slog.Logger
	servers []*server // in name order
	byName  map[string]*server

	// dialHook, when set (by tests), replaces the real transports.
	dialHook func(ctx context.Context, name string) (sdk.Transport, error)
	// grace is how long closing a stdio server waits for it to exit before
	// signalling its process group (SIGTERM, then as long again, SIGKILL).
	grace time.Duration

	// catalogue is every tool offered now, rebuilt when a server's tools
	// change, so that Tools (called by every turn) only loads a pointer.
	catalogue atomic.Pointer[catalogue]
	// catMu serialises changes of the servers' states with rebuilds of
	// the catalogue (lock order: catMu, then a server's mu).
	catMu   sync.Mutex
	renamed map[string]string // server+"\x00"+tool → name logged; under catMu

	mu      sync.Mutex
	started bool
	stopped bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

var (
	_ core.Plugin       = (*Manager)(nil)
	_ core.ToolProvider = (*Manager)(nil)
	_ core.Service      = (*Manager)(nil)
)

// nameRE is what a server's name may hold: it prefixes its tools' names,
// which OpenAI limits to [a-zA-Z0-9_-].
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// New checks opts and returns a Manager. It has no side effects: no process
// is started before Start.
func New(opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxResultChars < 0 || opts.InitTimeout < 0 || opts.RestartMin < 0 || opts.RestartMax < 0 {
		return nil, errors.New("mcp: MaxResultChars, InitTimeout, RestartMin and RestartMax must not be negative")
	}
	if opts.MaxResultChars == 0 {
		opts.MaxResultChars = DefaultMaxResultChars
	}
	if opts.InitTimeout == 0 {
		opts.InitTimeout = DefaultInitTimeout
	}
	if opts.RestartMin == 0 {
		opts.RestartMin = DefaultRestartMin
	}
	if opts.RestartMax == 0 {
		opts.RestartMax = max(DefaultRestartMax, opts.RestartMin)
	}
	if opts.RestartMax < opts.RestartMin {
		return nil, fmt.Errorf("mcp: RestartMax (%s) is less than RestartMin (%s)", opts.RestartMax, opts.RestartMin)
	}
	m := &Manager{
		opts:    opts,
		log:     opts.Logger,
		byName:  make(map[string]*server, len(opts.Servers)),
		grace:   2 * time.Second,
		renamed: map[string]string{},
	}
	for _, cfg := range opts.Servers {
		if err := checkServer(cfg); err != nil {
			return nil, err
		}
		if _, dup := m.byName[cfg.Name]; dup {
			return nil, fmt.Errorf("mcp: two servers are named %q", cfg.Name)
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = DefaultTimeout
		}
		s := newServer(m, cfg)
		m.byName[cfg.Name] = s
		m.servers = append(m.servers, s)
	}
	slices.SortFunc(m.servers, func(a, b *server) int { return strings.Compare(a.cfg.Name, b.cfg.Name) })
	m.catalogue.Store(&catalogue{})
	return m, nil
}

// checkServer rejects a server no connection could be made from. Errors
// name the server and the field, never a value that may be a secret.
func checkServer(s Server) error {
	switch {
	case !nameRE.MatchString(s.Name):
		return fmt.Errorf("mcp: server name %q must be 1 to 32 letters, digits, \"-\" or \"_\"", s.Name)
	case strings.Contains(s.Name, "__"):
		return fmt.Errorf("mcp: server name %q must not contain \"__\" (it separates server and tool)", s.Name)
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("mcp: server %s needs a command (stdio) or a url (HTTP)", s.Name)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("mcp: server %s has both a command and a url", s.Name)
	case s.Timeout < 0:
		return fmt.Errorf("mcp: server %s: timeout must not be negative", s.Name)
	}
	return nil
}

// Name is the plugin's name.
func (m *Manager) Name() string { return "mcp" }

// Start starts every server's connection loop in the background and
// returns at once. A server that cannot start never fails Start: it is
// reported as down and retried.
func (m *Manager) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return errors.New("mcp: already started")
	}
	m.started = true
	// The loops live until Stop, not until the end of the context that
	// happened to start them; they keep its values.
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	for _, s := range m.servers {
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			s.run(loopCtx)
		}()
	}
	return nil
}

// Stop closes the sessions, ends every server process and its children,
// and waits for the loops. It returns early, with an error, only if ctx
// ends first.
func (m *Manager) Stop(ctx context.Context) error {
	m.mu.Lock()
	if !m.started || m.stopped {
		m.mu.Unlock()
		return nil
	}
	m.stopped = true
	m.cancel()
	m.mu.Unlock()

	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("mcp: stopping servers: %w", ctx.Err())
	}
}

// Tools returns the tools of the servers that are up now and, in a turn,
// share_image, which sends the user an image one of them returned.
func (m *Manager) Tools(ctx context.Context, t *core.Turn) ([]llm.Tool, error) {
	cat := m.catalogue.Load()
	if t == nil || len(cat.tools) == 0 {
		// Without a turn there is no reply to attach to, and without an
		// MCP tool no image to share. Clipped, so that a caller's append
		// copies instead of writing into the shared array.
		return slices.Clip(cat.tools), nil
	}
	// share_image is offered whenever an MCP tool is, not only after one
	// returned an image: the tools are fixed before the model's first
	// call, and a list that does not change within a conversation keeps
	// the provider's prompt cache. The shelf, reached only through this
	// turn's tools, holds the turn's images and ends with it.
	sh := &shelf{turn: t}
	out := make([]llm.Tool, 0, len(cat.tools)+1)
	for i, tool := range cat.tools {
		// A tool the user may not use is never offered: the model cannot
		// call what it was not given.
		if !cat.who[i].lets(m.opts.Gate, string(t.Conversation.Platform), t.Conversation.ChannelUserID) {
			continue
		}
		call := tool.CallRich
		tool.CallRich = func(ctx context.Context, args json.RawMessage) (llm.ToolOutput, error) {
			return call(withShelf(ctx, sh), args)
		}
		out = append(out, tool)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return append(out, sh.tool()), nil
}

// State is a server's state: "starting", "ok" or "down: <short reason>".
func (m *Manager) State(name string) string {
	s, ok := m.byName[name]
	if !ok {
		return stateDown + "not configured"
	}
	// Under catMu: a state read here is one whose tools Tools offers.
	m.catMu.Lock()
	defer m.catMu.Unlock()
	return s.state()
}

// Names returns the configured servers' names, sorted.
func (m *Manager) Names() []string {
	names := make([]string, len(m.servers))
	for i, s := range m.servers {
		names[i] = s.cfg.Name
	}
	return names
}
