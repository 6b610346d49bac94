package config_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/config"
)

func TestVoiceRepliesAreOffByDefault(t *testing.T) {
	t.Parallel()
	c := setup(t).mustParse(t, "bot:\n  timezone: UTC\n")
	require.Equal(t, config.Voice{Replies: "never", Model: "tts-1", Voice: "alloy", MaxCharacters: 1000}, c.Voice)
	c = setup(t).mustParse(t, "voice:\n  replies: mirror\n  voice: nova\n  base_url: http://tts.local:8880/v1\n")
	require.Equal(t, "mirror", c.Voice.Replies)
	require.Equal(t, "nova", c.Voice.Voice)
	require.Equal(t, "http://tts.local:8880/v1", c.Voice.BaseURL)
}

func TestBadVoiceSettingsNameTheirLineAndKey(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"voice:\n  replies: sometimes\n":             `config.yaml:2: voice.replies: must be never, mirror or always, got "sometimes"`,
		"voice:\n  base_url: tts.local\n":            `config.yaml:2: voice.base_url: must be an absolute http or https URL`,
		"voice:\n  replies: always\n  model: \"\"\n": `config.yaml:3: voice.model: voice replies need a speech model and a voice`,
		"voice:\n  max_characters: 0\n":              `config.yaml:2: voice.max_characters: must be at least 1`,
		"voice:\n  replies: always\n  speed: 2\n":    `config.yaml:3: voice.speed: unknown key`,
	} {
		_, err := setup(t).parse(src)
		require.ErrorContains(t, err, want, "source %q", src)
	}
}

func TestKeptFileBytesDefaultAndBadValues(t *testing.T) {
	t.Parallel()
	c := setup(t).mustParse(t, "bot:\n  timezone: UTC\n")
	require.Equal(t, config.ByteSize(500<<20), c.Store.MaxFileBytes)
	c = setup(t).mustParse(t, "store:\n  max_file_bytes: 0\n")
	require.Zero(t, c.Store.MaxFileBytes, "0 keeps none")
	_, err := setup(t).parse("store:\n  max_file_bytes: -1MiB\n")
	require.ErrorContains(t, err, "config.yaml:2: store.max_file_bytes")
}
