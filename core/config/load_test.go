package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/core/config"
	"github.com/stretchr/testify/require"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := config.Default()

	require.Equal(t, "sqlite", c.Store.Driver)
	require.Equal(t, "parley.db", c.Store.DSN.Reveal())
	require.Equal(t, "https://api.openai.com/v1", c.LLM.BaseURL)
	require.Empty(t, c.LLM.APIKey.Reveal())
	require.Equal(t, "gpt-4o-mini", c.LLM.Model)
	require.Equal(t, "", c.LLM.LightModel)
	require.Equal(t, "gpt-4o-mini", c.LightModel())
	require.Equal(t, 60*time.Second, c.LLM.Timeout)
	require.Equal(t, 4, c.LLM.MaxToolRounds)
	require.Equal(t, 3, c.LLM.MaxRetries)
	require.Equal(t, "UTC", c.Bot.Timezone)
	require.Equal(t, time.UTC, c.Location())
	require.Empty(t, c.Bot.AllowUsers)
	require.Equal(t, "Sorry, I can't answer right now. Please try again in a little while.", c.Bot.FailureMessage)
	require.Equal(t, 1500*time.Millisecond, c.Runs.Debounce)
	require.Equal(t, "queue", c.Runs.DuringGeneration)
	require.Equal(t, 2*time.Minute, c.Runs.StaleAfter)
	require.Equal(t, 3, c.Scheduler.MaxAttempts)
	require.Equal(t, 24*time.Hour, c.Scheduler.LateGrace)
	require.Equal(t, 50, c.Scheduler.MaxPendingPerConversation)
	require.Equal(t, "127.0.0.1:8080", c.HTTP.Listen)
	require.Empty(t, c.HTTP.APIToken.Reveal())
	require.Equal(t, "text", c.Log.Format)
	require.Equal(t, "info", c.Log.Level)
	require.Empty(t, c.Adapters)
	require.Empty(t, c.Plugins)
	require.NoError(t, c.Validate())
}

func TestDefaultWithEnv(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["OPENAI_API_KEY"] = "sk-from-env"
	b.env["PARLEY_API_TOKEN"] = "tok-from-env"

	c := config.DefaultWithEnv(b.lookup)

	require.Equal(t, "sk-from-env", c.LLM.APIKey.Reveal())
	require.Equal(t, "tok-from-env", c.HTTP.APIToken.Reveal())
	want := config.Default()
	want.LLM.APIKey, want.HTTP.APIToken = c.LLM.APIKey, c.HTTP.APIToken
	require.Equal(t, want, c)
}

func TestParseOnlyCommentKeepsDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["OPENAI_API_KEY"] = "sk-env"

	for _, src := range []string{"# nothing here yet\n", "", "---\n"} {
		c := b.mustParse(t, src)
		want := config.DefaultWithEnv(b.lookup)
		want.File = "config.yaml"
		require.Equal(t, want, c, "source %q", src)
	}
}

func TestParseOverridesOnlyWrittenKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, `
store:
  driver: postgres
  dsn: postgres://parley:pw@db/parley
llm:
  model: local-llama
  light_model: tiny
  timeout: 90s
  max_retries: 0
bot:
  timezone: Europe/Berlin
  allow_users: ["telegram:12345", "discord:987"]
runs:
  during_generation: restart
  debounce: 0s
scheduler:
  late_grace: 0s
  max_sends_in_doubt: 8
http:
  listen: ":9000"
  public: true
log: {format: json, level: debug}
`)
	require.Equal(t, "postgres", c.Store.Driver)
	require.Equal(t, "postgres://parley:pw@db/parley", c.Store.DSN.Reveal())
	require.Equal(t, "local-llama", c.LLM.Model)
	require.Equal(t, "tiny", c.LightModel())
	require.Equal(t, 90*time.Second, c.LLM.Timeout)
	require.Equal(t, 0, c.LLM.MaxRetries)
	require.Equal(t, 4, c.LLM.MaxToolRounds, "an absent key keeps its default")
	require.Equal(t, "https://api.openai.com/v1", c.LLM.BaseURL)
	require.Equal(t, "Europe/Berlin", c.Location().String())
	require.Equal(t, []string{"telegram:12345", "discord:987"}, c.Bot.AllowUsers)
	require.Equal(t, "restart", c.Runs.DuringGeneration)
	require.Equal(t, time.Duration(0), c.Runs.Debounce)
	require.Equal(t, 2*time.Minute, c.Runs.StaleAfter)
	require.Equal(t, time.Duration(0), c.Scheduler.LateGrace)
	require.Equal(t, 8, c.Scheduler.MaxSendsInDoubt)
	require.Equal(t, time.Minute, c.Scheduler.JobLease, "an absent key keeps its default")
	require.Equal(t, ":9000", c.HTTP.Listen)
	require.Equal(t, config.Log{Format: "json", Level: "debug"}, c.Log)
}

func TestParseNullKeepsDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, "llm:\n  timeout:\n  model: ~\nruns:\n")
	require.Equal(t, 60*time.Second, c.LLM.Timeout)
	require.Equal(t, "gpt-4o-mini", c.LLM.Model)
	require.Equal(t, config.Default().Runs, c.Runs)
}

func TestLoadExampleEqualsDefaults(t *testing.T) {
	t.Parallel()

	c, err := config.Load("../../config.example.yaml", nil)
	require.NoError(t, err)

	require.Equal(t, "../../config.example.yaml", c.File)
	want := config.Default()
	want.File, want.Adapters, want.Plugins = c.File, c.Adapters, c.Plugins
	// With no environment, every ${VAR} of the example is unset, and said.
	require.Equal(t, "OPENAI_API_KEY", c.Unset["llm.api_key"])
	require.Equal(t, "TELEGRAM_BOT_TOKEN", c.Unset["adapters.telegram.token"])
	want.Unset = c.Unset
	require.Equal(t, want, c)

	require.Len(t, c.Adapters, 5)
	for _, name := range []string{"telegram", "discord", "slack", "terminal"} {
		require.False(t, c.Adapters[name].Enabled, "adapters other than web are off until configured: %s", name)
	}
	web := c.Adapters["web"]
	require.True(t, web.Enabled)
	require.Equal(t, "adapters.web", web.Path)
	require.Equal(t, "../../config.example.yaml", web.File)

	require.Len(t, c.Plugins, 7)
	for _, name := range []string{"persona", "memory", "mood", "control_tokens", "proactive", "schedule"} {
		require.True(t, c.Plugins[name].Enabled, "plugins.%s is on by default", name)
	}
	require.False(t, c.Plugins["images"].Enabled, "plugins.images is off by default")
	persona := c.Plugins["persona"]
	var pc struct {
		Name string `yaml:"name"`
		File string `yaml:"file"`
		Text string `yaml:"text"`
	}
	require.NoError(t, persona.Decode(&pc))
	require.Equal(t, "Subaru", pc.Name)
	require.Equal(t, "", pc.File)
}

func TestLoadExampleReadsSecretsFromEnv(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["OPENAI_API_KEY"] = "sk-example"
	b.env["PARLEY_API_TOKEN"] = "api-example-0123456789"

	c, err := config.Load("../../config.example.yaml", b.lookup)
	require.NoError(t, err)
	require.Equal(t, "sk-example", c.LLM.APIKey.Reveal())
	require.Equal(t, "api-example-0123456789", c.HTTP.APIToken.Reveal())
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")

	_, err := config.Load(path, nil)

	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Equal(t, "reading config: open "+path+": no such file or directory", err.Error())
}

func TestLoadFileNamesItInErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bot.yaml")
	require.NoError(t, os.WriteFile(path, []byte("store:\n  driver: mysql\n"), 0o600))

	_, err := config.Load(path, nil)

	require.EqualError(t, err, path+`:2: store.driver: must be sqlite or postgres, got "mysql"`)
}

func TestSendsInDoubtOutOfRangeNamesLineAndKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for src, want := range map[string]string{
		"scheduler:\n  job_lease: 1m\n  max_sends_in_doubt: 0\n": `config.yaml:3: scheduler.max_sends_in_doubt: must be between 1 and 64, got 0`,
		"scheduler: {max_sends_in_doubt: 65}\n":                  `config.yaml:1: scheduler.max_sends_in_doubt: must be between 1 and 64, got 65`,
		"scheduler: {max_sends_in_doubt: many}\n":                `config.yaml:1: scheduler.max_sends_in_doubt: expected an integer, got "many"`,
	} {
		_, err := b.parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
}

func TestValidateWithoutLines(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Runs.DuringGeneration = "later"
	c.LLM.MaxToolRounds = 0
	c.HTTP.Listen = "8080"
	c.Scheduler.JobLease = 500 * time.Millisecond

	err := c.Validate()

	require.EqualError(t, err, strings.Join([]string{
		`config: llm.max_tool_rounds: must be between 1 and 32, got 0`,
		`config: runs.during_generation: must be reject, queue or restart, got "later"`,
		`config: scheduler.job_lease: must be at least 1s, got 500ms`,
		`config: http.listen: must be host:port (e.g. "127.0.0.1:8080"), got "8080"`,
	}, "\n"))
	for _, e := range configErrors(t, err) {
		require.Zero(t, e.Line)
	}
}

func TestErrorAs(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.parse("llm:\n  timeout: 5 parsecs\n")

	var ce *config.Error
	require.True(t, errors.As(err, &ce))
	require.Equal(t, config.Error{File: "config.yaml", Line: 2, Key: "llm.timeout", Msg: `invalid duration "5 parsecs"`}, *ce)
}

func TestTurnTimeoutAndMaxTokensNameLineAndKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for src, want := range map[string]string{
		// The default turn_timeout (5m) against a longer llm.timeout: the
		// error points at the line that made the clash.
		"llm:\n  timeout: 10m\n":                           `config.yaml:2: runs.turn_timeout: must be longer than llm.timeout (10m0s): a turn makes at least one model call, got 5m0s`,
		"llm: {timeout: 90s}\nruns:\n  turn_timeout: 1m\n": `config.yaml:3: runs.turn_timeout: must be longer than llm.timeout (1m30s): a turn makes at least one model call, got 1m0s`,
		"runs:\n  turn_timeout: 0s\n":                      `config.yaml:2: runs.turn_timeout: must be greater than 0, got 0s`,
		"runs:\n  turn_timeout: soon\n":                    `config.yaml:2: runs.turn_timeout: invalid duration "soon"`,
		"llm:\n  max_tokens: 0\n":                          `config.yaml:2: llm.max_tokens: must be between 16 and 1048576, got 0`,
		"llm:\n  max_tokens: lots\n":                       `config.yaml:2: llm.max_tokens: expected an integer, got "lots"`,
	} {
		_, err := b.parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
	c, err := b.parse("llm: {max_tokens: 512, timeout: 30s}\nruns: {turn_timeout: 2m}\n")
	require.NoError(t, err)
	require.Equal(t, 512, c.LLM.MaxTokens)
	require.Equal(t, 2*time.Minute, c.Runs.TurnTimeout)
	require.Equal(t, 2048, config.Default().LLM.MaxTokens)
	require.Equal(t, 5*time.Minute, config.Default().Runs.TurnTimeout)
}

func TestRunsWorkersIsRefusedNamingTheNewKey(t *testing.T) {
	t.Parallel()
	_, err := setup(t).parse("runs:\n  debounce: 1s\n  workers: 8\n")
	require.Error(t, err)
	require.Contains(t, err.Error(), "config.yaml:3: runs.workers: is no longer used")
	require.Contains(t, err.Error(), "llm.max_concurrency")
}
