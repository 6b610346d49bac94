package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/parleybot/parley/core/config"
	"github.com/stretchr/testify/require"
)

// memoryConfig stands in for a plugin's config struct.
type memoryConfig struct {
	MaxFacts   int           `yaml:"max_facts"`
	SessionGap time.Duration `yaml:"session_gap"`
	Baseline   struct {
		Valence float64 `yaml:"valence"`
		Arousal float64 `yaml:"arousal"`
	} `yaml:"baseline"`
	Tags   []string      `yaml:"tags"`
	Token  config.Secret `yaml:"token"`
	Common `yaml:",inline"`

	// Runtime state is not config: untagged fields can't be set from YAML.
	Cache map[string]string
}

// Common is inlined into memoryConfig.
type Common struct {
	Label string `yaml:"label"`
}

func newMemoryConfig() *memoryConfig {
	m := &memoryConfig{MaxFacts: 30, SessionGap: 10 * time.Minute, Tags: []string{"default"}}
	m.Baseline.Valence, m.Baseline.Arousal = 0.2, -0.1
	m.Label = "memory"
	return m
}

func TestSectionDecodeKeepsDefaults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["TOKEN"] = "tok-123"
	c := b.mustParse(t, `
plugins:
  memory:
    max_facts: 12
    baseline: {arousal: 0.5}
    token: ${TOKEN}
    label: mem
`)
	sec := c.Plugins["memory"]
	require.True(t, sec.Enabled, "a written section is enabled")
	require.Equal(t, "plugins.memory", sec.Path)
	require.Equal(t, "config.yaml", sec.File)
	require.Equal(t, 3, sec.Line)

	m := newMemoryConfig()
	require.NoError(t, sec.Decode(m))

	want := newMemoryConfig()
	want.MaxFacts = 12
	want.Baseline.Arousal = 0.5
	want.Token = "tok-123"
	want.Label = "mem"
	require.Equal(t, want, m)
}

func TestSectionEnabled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, `
adapters:
  web:
  terminal: {}
plugins:
  persona: {enabled: false, name: Rem}
  mood: {enabled: true}
  memory: {max_facts: 5}
`)
	require.True(t, c.Adapters["web"].Enabled, "an empty section is enabled")
	require.True(t, c.Adapters["terminal"].Enabled)
	require.False(t, c.Plugins["persona"].Enabled)
	require.True(t, c.Plugins["mood"].Enabled)
	require.True(t, c.Plugins["memory"].Enabled)

	// "enabled" is taken out, so a module's struct need not know it.
	var p struct {
		Name string `yaml:"name"`
	}
	require.NoError(t, c.Plugins["persona"].Decode(&p))
	require.Equal(t, "Rem", p.Name)

	for _, sec := range []config.Section{c.Adapters["web"], c.Plugins["mood"], {}} {
		m := newMemoryConfig()
		require.NoError(t, sec.Decode(m))
		require.Equal(t, newMemoryConfig(), m, "an empty section leaves defaults")
	}
}

func TestSectionDecodeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"unknown key", "plugins:\n  memory:\n    max_facts: 3\n    max_fact: 4\n",
			[]string{"config.yaml:4: plugins.memory.max_fact: unknown key"}},
		{"untagged field is not config", "plugins:\n  memory:\n    cache: {}\n",
			[]string{"config.yaml:3: plugins.memory.cache: unknown key"}},
		{"nested unknown key", "plugins:\n  memory:\n    baseline:\n      valance: 1\n",
			[]string{"config.yaml:4: plugins.memory.baseline.valance: unknown key"}},
		{"wrong types", "plugins:\n  memory:\n    max_facts: lots\n    baseline: calm\n    tags: {a: b}\n    token: [x]\n",
			[]string{
				`config.yaml:3: plugins.memory.max_facts: expected an integer, got "lots"`,
				`config.yaml:4: plugins.memory.baseline: expected a mapping, got a string`,
				`config.yaml:5: plugins.memory.tags: expected a list, got a mapping`,
				`config.yaml:6: plugins.memory.token: expected a string, got a list`,
			}},
		{"bad float", "plugins:\n  memory:\n    baseline: {valence: high}\n",
			[]string{`config.yaml:3: plugins.memory.baseline.valence: expected a number, got "high"`}},
		{"bad duration", "plugins:\n  memory:\n    session_gap: -10m\n",
			[]string{`config.yaml:3: plugins.memory.session_gap: must not be negative, got "-10m"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			c := b.mustParse(t, tc.src)

			err := c.Plugins["memory"].Decode(newMemoryConfig())

			require.EqualError(t, err, strings.Join(tc.want, "\n"))
			errs := configErrors(t, err)
			require.Len(t, errs, len(tc.want))
		})
	}
}

func TestSectionDecodeNeedsPointer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, "plugins:\n  memory: {max_facts: 3}\n")

	err := c.Plugins["memory"].Decode(memoryConfig{})

	require.EqualError(t, err, "decoding plugins.memory: need a non-nil pointer, got config_test.memoryConfig")
}

func TestSectionAnchorsAndMerge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustParse(t, `
plugins:
  memory: &mem
    max_facts: 9
    tags: [a, b]
  mood: *mem
  proactive:
    <<: *mem
    max_facts: 1
`)
	for name, facts := range map[string]int{"memory": 9, "mood": 9, "proactive": 1} {
		m := newMemoryConfig()
		require.NoError(t, c.Plugins[name].Decode(m), name)
		require.Equal(t, facts, m.MaxFacts, name)
		require.Equal(t, []string{"a", "b"}, m.Tags, name)
	}
}
