package mcp

import (
	"context"
	"fmt"
)

// Probe connects to the named server afresh, initializes, lists its tools
// and closes, for `parley doctor`. It does not touch the running loop. The
// count is of the tools the allow-list lets through.
func (m *Manager) Probe(ctx context.Context, name string) (tools int, err error) {
	s, ok := m.byName[name]
	if !ok {
		return 0, fmt.Errorf("mcp: no server named %q", name)
	}
	c, entries, err := m.connect(ctx, s)
	if err != nil {
		return 0, fmt.Errorf("mcp: %s: %s", name, s.redact.reason(err.Error()))
	}
	c.close()
	return len(entries), nil
}
