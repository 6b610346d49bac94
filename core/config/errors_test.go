package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	type want struct {
		line int
		key  string
		msg  string
	}
	cases := []struct {
		name string
		src  string
		want []want
	}{
		{"unknown top-level key", "stor:\n  driver: sqlite\n",
			[]want{{1, "stor", "unknown key"}}},
		{"unknown nested key", "llm:\n  model: m\n  modle: m\n",
			[]want{{3, "llm.modle", "unknown key"}}},
		{"duplicate key", "llm:\n  model: a\n  model: b\n",
			[]want{{3, "llm.model", "duplicate key"}}},
		{"string for int", "llm:\n  max_tool_rounds: many\n",
			[]want{{2, "llm.max_tool_rounds", `expected an integer, got "many"`}}},
		{"quoted number for int", "scheduler:\n  max_attempts: \"3\"\n",
			[]want{{2, "scheduler.max_attempts", `expected an integer, got "3"`}}},
		{"mapping for string", "llm:\n  model: {name: gpt}\n",
			[]want{{2, "llm.model", "expected a string, got a mapping"}}},
		{"list for mapping", "runs:\n  - debounce\n",
			[]want{{2, "runs", "expected a mapping, got a list"}}},
		{"scalar for list", "bot:\n  allow_users: telegram:1\n",
			[]want{{2, "bot.allow_users", "expected a list, got a string"}}},
		{"top level not a mapping", "- store\n",
			[]want{{1, "", "the top level must be a mapping, got a list"}}},
		{"bad duration", "llm:\n  timeout: 5 parsecs\n",
			[]want{{2, "llm.timeout", `invalid duration "5 parsecs"`}}},
		{"duration without unit", "llm:\n  timeout: 60\n",
			[]want{{2, "llm.timeout", `invalid duration "60" (add a unit, e.g. "60s")`}}},
		{"negative duration", "runs:\n  debounce: -1s\n",
			[]want{{2, "runs.debounce", `must not be negative, got "-1s"`}}},
		{"zero timeout", "llm:\n  timeout: 0s\n",
			[]want{{2, "llm.timeout", "must be greater than 0, got 0s"}}},
		{"unknown time zone", "bot:\n  timezone: Mars/Base\n",
			[]want{{2, "bot.timezone", `unknown time zone "Mars/Base"`}}},
		{"bad driver", "store:\n  driver: mysql\n",
			[]want{{2, "store.driver", `must be sqlite or postgres, got "mysql"`}}},
		{"empty dsn", "store:\n  dsn: \"\"\n",
			[]want{{2, "store.dsn", "must not be empty"}}},
		{"bad during_generation", "runs:\n  during_generation: interrupt\n",
			[]want{{2, "runs.during_generation", `must be reject, queue or restart, got "interrupt"`}}},
		{"bad url", "llm:\n  base_url: api.openai.com/v1\n",
			[]want{{2, "llm.base_url", `must be an absolute http or https URL, got "api.openai.com/v1"`}}},
		{"tool rounds out of range", "llm:\n  max_tool_rounds: 33\n",
			[]want{{2, "llm.max_tool_rounds", "must be between 1 and 32, got 33"}}},
		{"bad allow_users entry", "bot:\n  allow_users:\n    - telegram:1\n    - bob\n",
			[]want{{4, "bot.allow_users[1]", `must look like "platform:user_id" (e.g. "telegram:12345"), got "bob"`}}},
		{"bad owner", "bot:\n  owners: [olga]\n",
			[]want{{2, "bot.owners[0]", `must look like "platform:user_id" (e.g. "telegram:12345"), got "olga"`}}},
		{"bad dm_policy", "bot:\n  dm_policy: closed\n",
			[]want{{2, "bot.dm_policy", `must be open, allowlist or pairing, got "closed"`}}},
		{"allowlist of nobody", "bot:\n  dm_policy: allowlist\n",
			[]want{{2, "bot.dm_policy", `allowlist lets in only bot.allow_users and bot.owners, and both are empty: nobody could talk to the bot, got "allowlist"`}}},
		{"owners_only without owners", "mcp:\n  servers:\n    fs: {command: fs, owners_only: true}\n",
			[]want{{3, "mcp.servers.fs.owners_only", "offers the tools to bot.owners only, and bot.owners is empty: nobody would get them, got true"}}},
		{"bad tool allow entry", "bot:\n  owners: [\"telegram:1\"]\nmcp:\n  servers:\n    fs:\n      command: fs\n      tools: [read]\n      allow: {read: [owners, eve], write: [owners]}\n",
			[]want{{8, "mcp.servers.fs.allow.read[1]", `must be "owners" or look like "platform:user_id" (e.g. "telegram:12345"), got "eve"`},
				{8, "mcp.servers.fs.allow.write", `names a tool that tools: leaves out, got "write"`}}},
		{"bad listen", "http:\n  listen: localhost\n",
			[]want{{2, "http.listen", `must be host:port (e.g. "127.0.0.1:8080"), got "localhost"`}}},
		{"bad log level", "log:\n  level: loud\n",
			[]want{{2, "log.level", `must be debug, info, warn or error, got "loud"`}}},
		{"enabled not a bool", "adapters:\n  web:\n    enabled: \"yes please\"\n",
			[]want{{3, "adapters.web.enabled", `must be true or false, got "yes please"`}}},
		{"enabled a mapping", "plugins:\n  persona: {enabled: {really: true}}\n",
			[]want{{2, "plugins.persona.enabled", "must be true or false, got a mapping"}}},
		{"plugin section a scalar", "plugins:\n  persona: Subaru\n",
			[]want{{2, "plugins.persona", "expected a mapping, got a string"}}},
		{"plugins a list", "plugins:\n  - persona\n",
			[]want{{2, "plugins", "expected a mapping, got a list"}}},
		{"yaml syntax error", "store:\n  driver: sqlite\n  dsn: x: y\n",
			[]want{{3, "", "invalid YAML: mapping values are not allowed in this context"}}},
		{"yaml tab indentation", "store:\n  driver: sqlite\n\tdsn: x\n",
			[]want{{2, "", "invalid YAML: found a tab character that violates indentation"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)

			_, err := b.parse(tc.src)

			errs := configErrors(t, err)
			require.Len(t, errs, len(tc.want), "got: %v", err)
			lines := make([]string, len(tc.want))
			for i, w := range tc.want {
				require.Equal(t, "config.yaml", errs[i].File)
				require.Equal(t, w.line, errs[i].Line)
				require.Equal(t, w.key, errs[i].Key)
				require.Equal(t, w.msg, errs[i].Msg)
				lines[i] = errs[i].Error()
			}
			require.Equal(t, strings.Join(lines, "\n"), err.Error())
		})
	}
}

func TestParseErrorFormat(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.parse("llm:\n  timeout: 5 parsecs\n")
	require.EqualError(t, err, `config.yaml:2: llm.timeout: invalid duration "5 parsecs"`)

	_, err = b.parse("plugins:\n  persona: Subaru\n")
	require.EqualError(t, err, `config.yaml:2: plugins.persona: expected a mapping, got a string`)

	_, err = b.parse("store:\n  driver: sqlite\n  dsn: x: y\n")
	require.EqualError(t, err, `config.yaml:3: invalid YAML: mapping values are not allowed in this context`)
}

func TestParseReportsEveryErrorInFileOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.parse(`store:
  driver: mysql
llm:
  timeout: 5 parsecs
  max_tool_rounds: 0
  nope: true
bot:
  timezone: Mars/Base
  allow_users: [telegram:1, bob]
runs:
  during_generation: later
http:
  listen: localhost
plugins:
  persona: Subaru
  memory: {enabled: maybe}
`)

	require.EqualError(t, err, strings.Join([]string{
		`config.yaml:2: store.driver: must be sqlite or postgres, got "mysql"`,
		`config.yaml:4: llm.timeout: invalid duration "5 parsecs"`,
		`config.yaml:5: llm.max_tool_rounds: must be between 1 and 32, got 0`,
		`config.yaml:6: llm.nope: unknown key`,
		`config.yaml:8: bot.timezone: unknown time zone "Mars/Base"`,
		`config.yaml:9: bot.allow_users[1]: must look like "platform:user_id" (e.g. "telegram:12345"), got "bob"`,
		`config.yaml:11: runs.during_generation: must be reject, queue or restart, got "later"`,
		`config.yaml:13: http.listen: must be host:port (e.g. "127.0.0.1:8080"), got "localhost"`,
		`config.yaml:15: plugins.persona: expected a mapping, got a string`,
		`config.yaml:16: plugins.memory.enabled: must be true or false, got "maybe"`,
	}, "\n"))
	require.Len(t, configErrors(t, err), 10)
}

func TestParseDecodeErrorIsNotValidatedAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)

	// The bad value keeps its default, which is valid; only the decode
	// error is reported.
	_, err := b.parse("llm:\n  max_tool_rounds: lots\n")

	require.EqualError(t, err, `config.yaml:2: llm.max_tool_rounds: expected an integer, got "lots"`)
}
