package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewValidates(t *testing.T) {
	t.Parallel()
	cases := map[string]Options{
		"bad name":           {Servers: []Server{{Name: "a b", Command: "x"}}},
		"empty name":         {Servers: []Server{{Command: "x"}}},
		"double underscore":  {Servers: []Server{{Name: "a__b", Command: "x"}}},
		"duplicate":          {Servers: []Server{{Name: "a", Command: "x"}, {Name: "a", URL: "http://x"}}},
		"neither":            {Servers: []Server{{Name: "a"}}},
		"both":               {Servers: []Server{{Name: "a", Command: "x", URL: "http://x"}}},
		"negative timeout":   {Servers: []Server{{Name: "a", Command: "x", Timeout: -1}}},
		"max below min":      {RestartMin: 10, RestartMax: 5},
		"negative max chars": {MaxResultChars: -1},
	}
	for name, opts := range cases {
		_, err := New(opts)
		require.Error(t, err, name)
	}
}

func TestNewHasNoSideEffects(t *testing.T) {
	t.Parallel()
	m, err := New(Options{Servers: []Server{
		{Name: "zeta", Command: "/nonexistent/zeta", Env: map[string]string{"TOKEN": "secret-token"}},
		{Name: "alpha", URL: "http://127.0.0.1:1/mcp"},
	}})
	require.NoError(t, err)
	require.Equal(t, "mcp", m.Name())
	require.Equal(t, []string{"alpha", "zeta"}, m.Names())
	require.Equal(t, StateStarting, m.State("alpha"))
	require.Equal(t, "down: not configured", m.State("nope"))
	ts, err := m.Tools(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, ts)
	require.NoError(t, m.Stop(context.Background()), "Stop before Start does nothing")
	require.Equal(t, DefaultTimeout, m.byName["zeta"].cfg.Timeout)
	require.Equal(t, DefaultMaxResultChars, m.opts.MaxResultChars)
}

func TestStartStopOnce(t *testing.T) {
	t.Parallel()
	m, err := New(Options{Servers: []Server{{Name: "a", Command: "/nonexistent/a"}}})
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background()))
	require.Error(t, m.Start(context.Background()), "a second Start")
	waitState(t, m, "a", isDown)
	require.Contains(t, m.State("a"), "cannot start /nonexistent/a")
	require.NoError(t, m.Stop(context.Background()))
	require.NoError(t, m.Stop(context.Background()), "a second Stop")
	require.Equal(t, "down: stopped", m.State("a"))
}
