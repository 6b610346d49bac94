package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestUserLimitsDefaultToNone(t *testing.T) {
	t.Parallel()
	l := config.Default().Bot.Limits
	require.Zero(t, l.MessagesPerMinute)
	require.Zero(t, l.TurnsPerDay)
	require.Zero(t, l.TokensPerDay)
	require.Empty(t, l.Exempt)

	c := setup(t).mustParse(t, "bot:\n  timezone: UTC\n")
	require.Equal(t, l, c.Bot.Limits, "a file without bot.limits has none")
}

func TestUserLimitsValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["OWNER"] = "telegram:42"
	c := b.mustParse(t, `bot:
  limits:
    messages_per_minute: 10
    turns_per_day: 200
    tokens_per_day: 500000
    exempt: ["${OWNER}", "web:client-1"]
`)
	require.Equal(t, config.Limits{MessagesPerMinute: 10, TurnsPerDay: 200, TokensPerDay: 500000,
		Exempt: []string{"telegram:42", "web:client-1"}}, c.Bot.Limits)

	c = b.mustParse(t, "bot: {limits: {messages_per_minute: 0, turns_per_day: 0, tokens_per_day: 0, exempt: []}}\n")
	require.Equal(t, config.Default().Bot.Limits, c.Bot.Limits, "the contract's flow form, all off")
}

func TestUserLimitsRefuseBadValuesNamingLineAndKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for src, want := range map[string]string{
		"bot:\n  limits:\n    messages_per_minute: -1\n":     `config.yaml:3: bot.limits.messages_per_minute: must not be negative (0: no limit), got -1`,
		"bot:\n  limits:\n    turns_per_day: -20\n":          `config.yaml:3: bot.limits.turns_per_day: must not be negative (0: no limit), got -20`,
		"bot:\n  limits:\n    tokens_per_day: -5\n":          `config.yaml:3: bot.limits.tokens_per_day: must not be negative (0: no limit), got -5`,
		"bot:\n  limits:\n    turns_per_day: many\n":         `config.yaml:3: bot.limits.turns_per_day: expected an integer, got "many"`,
		"bot:\n  limits:\n    exempt: [telegram:1, bob]\n":   `config.yaml:3: bot.limits.exempt[1]: must look like "platform:user_id" (e.g. "telegram:12345"), got "bob"`,
		"bot:\n  limits:\n    exempt:\n      - \"web: x\"\n": `config.yaml:4: bot.limits.exempt[0]: must look like "platform:user_id" (e.g. "telegram:12345"), got "web: x"`,
		"bot:\n  limits:\n    exempt: telegram:1\n":          `config.yaml:3: bot.limits.exempt: expected a list, got a string`,
		"bot:\n  limits:\n    per_hour: 3\n":                 `config.yaml:3: bot.limits.per_hour: unknown key`,
	} {
		_, err := b.parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
}

func TestUserLimitsEveryProblemIsReported(t *testing.T) {
	t.Parallel()
	_, err := setup(t).parse("bot:\n  limits:\n    messages_per_minute: -1\n    tokens_per_day: -1\n    exempt: [\"\"]\n")
	errs := configErrors(t, err)
	require.Len(t, errs, 3)
	keys := []string{errs[0].Key, errs[1].Key, errs[2].Key}
	require.Equal(t, []string{"bot.limits.messages_per_minute", "bot.limits.tokens_per_day", "bot.limits.exempt[0]"}, keys)
	require.Equal(t, []int{3, 4, 5}, []int{errs[0].Line, errs[1].Line, errs[2].Line})
}

func TestUserLimitsValidateInCode(t *testing.T) {
	t.Parallel()
	c := config.Default()
	c.Bot.Limits.TurnsPerDay = -1
	c.Bot.Limits.Exempt = []string{"nobody"}
	err := c.Validate()
	require.ErrorContains(t, err, "bot.limits.turns_per_day: must not be negative (0: no limit), got -1")
	require.ErrorContains(t, err, `bot.limits.exempt[0]: must look like "platform:user_id"`)
}
