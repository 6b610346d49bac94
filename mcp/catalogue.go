package mcp

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/llm"
)

// toolEntry is one tool of a server as listed.
type toolEntry struct {
	tool   string // the server's own name for it
	desc   string
	params json.RawMessage
	schema *jsonschema.Resolved // nil: arguments are not checked
}

// list fetches the server's tools (every page), keeping those the
// allow-list lets through.
func (s *server) list(ctx context.Context, c *conn) ([]*toolEntry, error) {
	allowed := s.cfg.Tools
	seen := map[string]bool{}
	var out []*toolEntry
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t.Name == "" || seen[t.Name] {
			s.warnOnce("dup\x00"+t.Name, "mcp: server listed a tool without a name or twice; ignored", "tool", t.Name)
			continue
		}
		seen[t.Name] = true
		if len(allowed) > 0 && !slices.Contains(allowed, t.Name) {
			continue
		}
		out = append(out, s.entry(t))
	}
	for _, name := range allowed {
		if !seen[name] {
			s.warnOnce("missing\x00"+name, "mcp: allow-listed tool not offered by the server", "tool", name)
		}
	}
	return out, nil
}

// entry prepares a listed tool: its schema for the model and, compiled
// once, for checking arguments.
func (s *server) entry(t *sdk.Tool) *toolEntry {
	e := &toolEntry{tool: t.Name, desc: t.Description, params: inputSchema(t.InputSchema)}
	if e.desc == "" {
		e.desc = t.Title
	}
	rs, err := compileSchema(e.params)
	if err != nil {
		s.warnOnce("schema\x00"+t.Name, "mcp: tool's input schema does not compile; its arguments go unchecked",
			"tool", t.Name, "error", s.redact.reason(err.Error()))
		return e
	}
	e.schema = rs
	return e
}

// rebuildLocked recomputes the tools offered to the model from every
// server's current list, giving each a unique name. Called under catMu.
func (m *Manager) rebuildLocked() {
	type offer struct {
		s     *server
		e     *toolEntry
		name  string
		exact bool // the name is SERVER__TOOL unchanged, and first to have it
	}
	var offers []offer
	taken := map[string]bool{}
	for _, s := range m.servers {
		_, _, entries := s.snapshot()
		for _, e := range entries {
			o := offer{s: s, e: e, name: toolName(s.cfg.Name, e.tool)}
			// A tool whose name needed no change keeps it; one renamed
			// into it gives way.
			if o.name == s.cfg.Name+"__"+e.tool && !taken[o.name] {
				o.exact, taken[o.name] = true, true
			}
			offers = append(offers, o)
		}
	}
	var (
		tools []llm.Tool
		who   []trust
	)
	for _, o := range offers {
		if !o.exact {
			if taken[o.name] {
				o.name = uniqueName(o.s.cfg.Name, o.e.tool)
			}
			if taken[o.name] {
				o.s.warnOnce("clash\x00"+o.e.tool, "mcp: tool name clashes with another tool's; not offered", "tool", o.e.tool)
				continue
			}
			taken[o.name] = true
			m.noteRename(o.s, o.e.tool, o.name)
		}
		tools = append(tools, m.llmTool(o.s, o.e, o.name))
		who = append(who, trust{ownersOnly: o.s.cfg.OwnersOnly, allow: o.s.cfg.Allow[o.e.tool]})
	}
	m.catalogue.Store(&catalogue{tools: tools, who: who})
}

// catalogue is the tools offered now, each with who may have it.
type catalogue struct {
	tools []llm.Tool
	who   []trust
}

// trust is who a tool is offered to: the owners only, and/or those Allow
// names ("owners", "platform:user_id"); nothing set is everyone.
type trust struct {
	ownersOnly bool
	allow      []string
}

// lets reports whether the tool is offered in the conversation of user
// on platform.
func (w trust) lets(g *access.Gate, platform, user string) bool {
	owner := g.IsOwner(platform, user)
	if w.ownersOnly && !owner {
		return false
	}
	if len(w.allow) == 0 {
		return true
	}
	for _, u := range w.allow {
		if (u == "owners" && owner) || u == platform+":"+user {
			return true
		}
	}
	return false
}

// noteRename logs, once per name given, a tool the model sees under a
// name other than SERVER__TOOL. Called under catMu.
func (m *Manager) noteRename(s *server, tool, name string) {
	if name == s.cfg.Name+"__"+tool {
		return
	}
	key := s.cfg.Name + "\x00" + tool
	if m.renamed[key] == name {
		return
	}
	m.renamed[key] = name
	s.log.Info("mcp: tool renamed for the model", "tool", tool, "name", name)
}

func (m *Manager) llmTool(s *server, e *toolEntry, name string) llm.Tool {
	return llm.Tool{
		Name:        name,
		Description: e.desc,
		Parameters:  e.params,
		CallRich: func(ctx context.Context, args json.RawMessage) (llm.ToolOutput, error) {
			return s.call(ctx, e.tool, name, args)
		},
	}
}
