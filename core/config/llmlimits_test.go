package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestLLMLimitsDefaultsAndValues(t *testing.T) {
	t.Parallel()
	d := config.Default().LLM
	require.Equal(t, 256, d.MaxConcurrency)
	require.Zero(t, d.RequestsPerMinute, "unlimited unless set")
	require.Zero(t, d.TokensPerMinute, "unlimited unless set")

	c := setup(t).mustParse(t, "llm:\n  max_concurrency: 0\n  requests_per_minute: 500\n  tokens_per_minute: 30000\n")
	require.Zero(t, c.LLM.MaxConcurrency, "0 turns the limit off")
	require.Equal(t, 500, c.LLM.RequestsPerMinute)
	require.Equal(t, 30000, c.LLM.TokensPerMinute)
}

func TestLLMLimitsMustNotBeNegative(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for src, want := range map[string]string{
		"llm:\n  max_concurrency: -1\n":       `config.yaml:2: llm.max_concurrency: must not be negative (0: no limit), got -1`,
		"llm:\n  requests_per_minute: -5\n":   `config.yaml:2: llm.requests_per_minute: must not be negative (0: no limit), got -5`,
		"llm:\n  tokens_per_minute: -30000\n": `config.yaml:2: llm.tokens_per_minute: must not be negative (0: no limit), got -30000`,
		"llm: {max_concurrency: plenty}\n":    `config.yaml:1: llm.max_concurrency: expected an integer, got "plenty"`,
	} {
		_, err := b.parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
}
