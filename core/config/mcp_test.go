package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestMCPServersAndCommandsDecode(t *testing.T) {
	t.Parallel()
	d := config.Default()
	require.Empty(t, d.MCP.Servers)
	require.True(t, d.Commands.Enabled, "commands are on by default")

	c := setup(t).mustParse(t, `mcp:
  servers:
    files:
      command: npx
      args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"]
      env: {NOTES_TOKEN: s3cret}
      tools: [read_file, list_directory]
    search:
      url: https://mcp.example.com/mcp
      headers: {Authorization: Bearer abc}
      timeout: 5s
      enabled: false
commands:
  enabled: false
`)
	files := c.MCP.Servers["files"]
	require.Equal(t, "npx", files.Command)
	require.Equal(t, []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/notes"}, files.Args)
	require.Equal(t, "s3cret", files.Env["NOTES_TOKEN"].Reveal())
	require.Equal(t, []string{"read_file", "list_directory"}, files.Tools)
	require.True(t, files.IsEnabled())
	require.Equal(t, config.DefaultMCPTimeout, files.CallTimeout())
	search := c.MCP.Servers["search"]
	require.Equal(t, 5*time.Second, search.CallTimeout())
	require.False(t, search.IsEnabled())
	require.Equal(t, "Bearer abc", search.Headers["Authorization"].Reveal())
	require.False(t, c.Commands.Enabled)
}

func TestMCPServerMistakesNameTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for src, want := range map[string]string{
		"mcp:\n  servers:\n    notes: {}\n":                                      `config.yaml:3: mcp.servers.notes: needs command (a stdio server) or url (a streamable HTTP server)`,
		"mcp:\n  servers:\n    notes:\n      command: x\n      url: http://h/\n": `config.yaml:5: mcp.servers.notes.url: must not be set beside command`,
		"mcp:\n  servers:\n    notes:\n      url: ftp://h/\n":                    `config.yaml:4: mcp.servers.notes.url: must be an absolute http or https URL, got "ftp://h/"`,
		"mcp:\n  servers:\n    my__notes:\n      command: x\n":                   `config.yaml:4: mcp.servers.my__notes: server name must not contain "__"`,
		"mcp:\n  servers:\n    \"my notes\":\n      command: x\n":                `config.yaml:4: mcp.servers.my notes: server name must be 1 to 32 letters`,
		"mcp:\n  servers:\n    notes:\n      command: x\n      timeout: -1s\n":   `config.yaml:5: mcp.servers.notes.timeout: must not be negative`,
		"mcp:\n  servers:\n    notes:\n      command: x\n      tools: [\"\"]\n":  `mcp.servers.notes.tools[0]: must not be empty`,
		"mcp:\n  servers:\n    notes:\n      command: x\n      port: 3\n":        `config.yaml:5: mcp.servers.notes.port: unknown key`,
		"commands: {enabled: maybe}\n":                                           `config.yaml:1: commands.enabled:`,
	} {
		_, err := b.parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
}

func TestMCPSecretsAreNotShownInErrors(t *testing.T) {
	t.Parallel()
	_, err := setup(t).parse("mcp:\n  servers:\n    notes:\n      url: ftp://h/\n      headers: {Authorization: Bearer topsecret}\n")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "topsecret")
}

func TestConsolePrices(t *testing.T) {
	t.Parallel()
	require.Empty(t, config.Default().Console.Prices, "no prices by default: no cost is shown")
	c := setup(t).mustParse(t, "console:\n  prices:\n    gpt-4o-mini: {prompt: 0.15, completion: 0.6}\n")
	require.Equal(t, config.Price{Prompt: 0.15, Completion: 0.6}, c.Console.Prices["gpt-4o-mini"])
	_, err := setup(t).parse("console:\n  prices:\n    m: {prompt: -1, completion: 2}\n")
	require.ErrorContains(t, err, "config.yaml:3: console.prices.m: prices must not be negative")
	_, err = setup(t).parse("console:\n  prices:\n    m: {prompt: cheap}\n")
	require.ErrorContains(t, err, "console.prices.m.prompt")
}
