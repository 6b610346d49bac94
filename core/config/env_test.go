package config_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestEnvExpansion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		src  string
		want string // bot.failure_message
	}{
		{"variable", map[string]string{"MSG": "brb"}, "bot:\n  failure_message: ${MSG}\n", "brb"},
		{"inside text", map[string]string{"WHO": "Subaru"}, "bot:\n  failure_message: ${WHO} is away\n", "Subaru is away"},
		{"quoted", map[string]string{"MSG": "brb"}, "bot:\n  failure_message: \"[${MSG}]\"\n", "[brb]"},
		{"default when unset", nil, "bot:\n  failure_message: ${MSG:-later}\n", "later"},
		{"default when empty", map[string]string{"MSG": ""}, "bot:\n  failure_message: ${MSG:-later}\n", "later"},
		{"default not used when set", map[string]string{"MSG": "now"}, "bot:\n  failure_message: ${MSG:-later}\n", "now"},
		{"default with spaces and colons", nil, "bot:\n  failure_message: \"${MSG:-back at 9: soon}\"\n", "back at 9: soon"},
		{"dollar dollar", map[string]string{"N": "5"}, "bot:\n  failure_message: costs $$${N} or $$$$\n", "costs $5 or $$"},
		{"lone dollar kept", nil, "bot:\n  failure_message: costs $5 $HOME\n", "costs $5 $HOME"},
		{"value with yaml syntax stays a string", map[string]string{"MSG": "a: b\n- c\n{d: [e]}\n# f"},
			"bot:\n  failure_message: ${MSG}\n", "a: b\n- c\n{d: [e]}\n# f"},
		{"value that looks like null stays a string", map[string]string{"MSG": "null"}, "bot:\n  failure_message: ${MSG}\n", "null"},
		{"value that looks like a bool stays a string", map[string]string{"MSG": "true"}, "bot:\n  failure_message: ${MSG}\n", "true"},
		{"literal null keeps default", nil, "bot:\n  failure_message: ~\n", "Sorry, I can't answer right now. Please try again in a little while."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for k, v := range tc.env {
				b.env[k] = v
			}

			c := b.mustParse(t, tc.src)

			require.Equal(t, tc.want, c.Bot.FailureMessage)
		})
	}
}

func TestEnvUnsetWithoutDefaultIsEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["OPENAI_API_KEY"] = "sk-default"

	c := b.mustParse(t, "llm:\n  api_key: ${MY_KEY}\n  light_model: ${LIGHT}\n")

	// The file named another variable, so the OPENAI_API_KEY default is gone.
	require.Equal(t, "", c.LLM.APIKey.Reveal())
	require.Equal(t, "", c.LLM.LightModel)
	require.Equal(t, map[string]string{"llm.api_key": "MY_KEY", "llm.light_model": "LIGHT"}, c.Unset, "the config knows why they are empty")
	require.Equal(t, "; llm.api_key is ${MY_KEY}, llm.light_model is ${LIGHT}, which are not set", c.UnsetUnder("llm"))
	require.Empty(t, c.UnsetUnder("adapters"))
}

// A variable with a default, or one that is set, is not unset; a value
// that fails its check because its variable is not set says so.
func TestEnvUnsetIsSaid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["SET_MODEL"] = "m"
	c := b.mustParse(t, "llm:\n  model: ${SET_MODEL}\n  light_model: ${NOT_SET:-small}\n")
	require.Empty(t, c.Unset)
	_, err := config.Parse("config.yaml", []byte("llm:\n  base_url: ${NO_URL}\n"), func(string) (string, bool) { return "", false })
	require.EqualError(t, err, "config.yaml:2: llm.base_url: must be an absolute http or https URL: ${NO_URL} is not set")
}

func TestEnvIntoTypedFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["ROUNDS"] = "7"
	b.env["PORT"] = "9090"
	b.env["WEB"] = "false"

	c := b.mustParse(t, `
llm:
  max_tool_rounds: ${ROUNDS}
  max_retries: "${RETRIES:-5}"
  timeout: ${TIMEOUT:-30s}
http:
  listen: 127.0.0.1:${PORT}
adapters:
  web: {enabled: "${WEB}"}
`)

	require.Equal(t, 7, c.LLM.MaxToolRounds)
	require.Equal(t, 5, c.LLM.MaxRetries)
	require.Equal(t, 30*time.Second, c.LLM.Timeout)
	require.Equal(t, "127.0.0.1:9090", c.HTTP.Listen)
	require.False(t, c.Adapters["web"].Enabled)
}

func TestEnvEmptyIntoTypedFieldKeepsDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)

	c := b.mustParse(t, "llm:\n  max_tool_rounds: ${ROUNDS}\n  timeout: ${TIMEOUT}\n")

	require.Equal(t, 4, c.LLM.MaxToolRounds)
	require.Equal(t, 60*time.Second, c.LLM.Timeout)
}

func TestEnvKeysAreNotExpanded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["NAME"] = "persona"

	c := b.mustParse(t, "plugins:\n  ${NAME}: {}\n")

	require.Contains(t, c.Plugins, "${NAME}")
	require.NotContains(t, c.Plugins, "persona")
}

func TestEnvErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		src  string
		want string
	}{
		{"missing brace", nil, "llm:\n  model: ${MODEL\n",
			`config.yaml:2: llm.model: malformed variable reference "${MODEL": missing "}"`},
		{"bad name", nil, "bot:\n  allow_users: [\"telegram:${1ID}\"]\n",
			`config.yaml:2: bot.allow_users[0]: malformed variable reference "${1ID}": want ${NAME} or ${NAME:-default}`},
		{"empty name", nil, "llm:\n  model: ${}\n",
			`config.yaml:2: llm.model: malformed variable reference "${}": want ${NAME} or ${NAME:-default}`},
		{"env value of the wrong type is not shown", map[string]string{"ROUNDS": "sk-secret"}, "llm:\n  max_tool_rounds: ${ROUNDS}\n",
			`config.yaml:2: llm.max_tool_rounds: expected an integer, got a value from the environment (not shown)`},
		{"env value failing validation is not shown", map[string]string{"DRIVER": "sk-secret"}, "store:\n  driver: ${DRIVER}\n",
			`config.yaml:2: store.driver: must be sqlite or postgres, got a value from the environment (not shown)`},
		{"env duration is not shown", map[string]string{"T": "sk-secret"}, "llm:\n  timeout: ${T}\n",
			`config.yaml:2: llm.timeout: invalid duration, got a value from the environment (not shown)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for k, v := range tc.env {
				b.env[k] = v
			}

			_, err := b.parse(tc.src)

			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "sk-secret")
		})
	}
}

func TestEnvMalformedReportedWithOtherErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)

	_, err := b.parse("store:\n  driver: mysql\nllm:\n  model: ${MODEL\n  timeout: 1 fortnight\n")

	errs := configErrors(t, err)
	require.Len(t, errs, 3)
	require.Equal(t, []string{"store.driver", "llm.model", "llm.timeout"}, []string{errs[0].Key, errs[1].Key, errs[2].Key})
	require.Equal(t, []int{2, 4, 5}, []int{errs[0].Line, errs[1].Line, errs[2].Line})
}
