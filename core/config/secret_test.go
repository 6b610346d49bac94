package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/parleybot/parley/core/config"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestSecretFormatting(t *testing.T) {
	t.Parallel()
	s := config.Secret("sk-live-123")

	require.Equal(t, "sk-live-123", s.Reveal())
	for _, verb := range []string{"%v", "%s", "%+v", "%10s", "%x", "%d"} {
		require.Equal(t, "[redacted]", fmt.Sprintf(verb, s), verb)
	}
	require.Equal(t, `"[redacted]"`, fmt.Sprintf("%q", s))
	require.Equal(t, `"[redacted]"`, fmt.Sprintf("%#v", s))
	require.Equal(t, "[redacted]", s.String())
	require.Equal(t, `"[redacted]"`, s.GoString())
	require.Equal(t, "[redacted]", fmt.Sprint(s))

	js, err := json.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, `"[redacted]"`, string(js))
	y, err := yaml.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, "'[redacted]'\n", string(y))
	txt, err := s.MarshalText()
	require.NoError(t, err)
	require.Equal(t, "[redacted]", string(txt))
	require.Equal(t, "[redacted]", s.LogValue().String())
}

func TestEmptySecretShowsEmpty(t *testing.T) {
	t.Parallel()
	var s config.Secret

	require.Equal(t, "", fmt.Sprintf("%v", s))
	require.Equal(t, `""`, fmt.Sprintf("%q", s))
	js, err := json.Marshal(s)
	require.NoError(t, err)
	require.Equal(t, `""`, string(js))
	require.Equal(t, "", s.LogValue().String())
}

// TestConfigNeverShowsSecrets prints, logs and marshals a whole Config,
// including an adapter section holding a token, and looks for the secrets.
func TestConfigNeverShowsSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.env["OPENAI_API_KEY"] = "sk-openai-secret"
	b.env["TG_TOKEN"] = "123:telegram-secret"
	c := b.mustParse(t, `
store:
  driver: postgres
  dsn: postgres://parley:db-password-secret@db/parley
http:
  api_token: api-token-secret
adapters:
  telegram: {token: "${TG_TOKEN}", webhook_secret: webhook-secret}
`)
	secrets := []string{"sk-openai-secret", "telegram-secret", "db-password-secret", "api-token-secret", "webhook-secret"}
	require.Equal(t, "sk-openai-secret", c.LLM.APIKey.Reveal())

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		outputs = append(outputs, fmt.Sprintf(verb, c), fmt.Sprintf(verb, *c))
	}
	js, err := json.Marshal(c)
	require.NoError(t, err)
	outputs = append(outputs, string(js))
	y, err := yaml.Marshal(c)
	require.NoError(t, err)
	outputs = append(outputs, string(y))

	var text, jsonLog bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&text, nil), slog.NewJSONHandler(&jsonLog, nil)} {
		log := slog.New(h)
		log.Info("loaded", "config", c, "llm", c.LLM, "key", c.LLM.APIKey, "adapters", c.Adapters)
		log.Info("section", "telegram", c.Adapters["telegram"])
	}
	outputs = append(outputs, text.String(), jsonLog.String())

	for _, out := range outputs {
		for _, s := range secrets {
			require.NotContains(t, out, s)
		}
	}
	require.Contains(t, text.String(), "key=[redacted]")
	require.Contains(t, jsonLog.String(), `"key":"[redacted]"`)
	require.Contains(t, fmt.Sprintf("%+v", c.Store), "DSN:[redacted]")
	require.Contains(t, string(js), `"APIToken":"[redacted]"`)
}

func TestSecretScrub(t *testing.T) {
	t.Parallel()
	s := config.Secret("123:TOKEN")
	err := errors.New(`Post "https://api.example/bot123:TOKEN/getMe": dial tcp: refused`)
	got := s.Scrub(err)
	require.EqualError(t, got, `Post "https://api.example/bot[redacted]/getMe": dial tcp: refused`)
	clean := errors.New("no secret here")
	require.Same(t, clean, s.Scrub(clean), "an error without the secret is returned as is")
	require.NoError(t, s.Scrub(nil))
	require.Same(t, err, config.Secret("").Scrub(err))
}
