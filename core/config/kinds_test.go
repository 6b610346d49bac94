package config_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// kindsConfig covers field kinds plugins use beyond the core config's.
type kindsConfig struct {
	Weights map[string]float64 `yaml:"weights"`
	Limit   *int               `yaml:"limit"`
	Extra   any                `yaml:"extra"`
	Level   slog.Level         `yaml:"level"`
	Rules   []struct {
		Match string `yaml:"match"`
	} `yaml:"rules"`
}

func TestSectionDecodeKinds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, `
plugins:
  kinds:
    weights: {happy: 1.5, sad: 2}
    limit: 3
    extra: [1, two]
    level: warn
    rules:
      - match: hello
`)
	k := kindsConfig{Weights: map[string]float64{"calm": 0.5}}

	require.NoError(t, c.Plugins["kinds"].Decode(&k))

	require.Equal(t, map[string]float64{"calm": 0.5, "happy": 1.5, "sad": 2}, k.Weights)
	require.NotNil(t, k.Limit)
	require.Equal(t, 3, *k.Limit)
	require.Equal(t, []any{1, "two"}, k.Extra)
	require.Equal(t, slog.LevelWarn, k.Level)
	require.Len(t, k.Rules, 1)
	require.Equal(t, "hello", k.Rules[0].Match)
}

func TestSectionDecodeKindErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, `
plugins:
  kinds:
    weights: {happy: lots}
    limit: [1]
    level: loudest
    rules:
      - match: hello
      - mach: hi
`)

	err := c.Plugins["kinds"].Decode(&kindsConfig{})

	require.EqualError(t, err, `config.yaml:4: plugins.kinds.weights.happy: expected a number, got "lots"
config.yaml:5: plugins.kinds.limit: expected an integer, got a list
config.yaml:6: plugins.kinds.level: invalid value: slog: level string "loudest": unknown name
config.yaml:9: plugins.kinds.rules[1].mach: unknown key`)
}
