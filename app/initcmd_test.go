package app

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// runInit runs parley init in-process with the answers typed on its
// input, one a line.
func (b *testBundle) runInit(t *testing.T, path string, answers []string, flags ...string) (int, string, string) {
	t.Helper()
	var out, errOut coretest.Logs
	in := strings.NewReader(strings.Join(answers, "\n") + "\n")
	code := Run(context.Background(), append([]string{"init", "-c", path}, flags...), IO{In: in, Out: &out, Err: &errOut}, b.lookup)
	return code, out.String(), errOut.String()
}

// A new owner's first run: the model and a Telegram bot, each checked as
// it is given, a database path; the file written is private, parses, and
// passes doctor. Neither key shows on the screen.
func TestInitAsksChecksAndWritesAConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
	b.model.SetAPIKey("sk-init-test-key-0123456789")
	tg := telegramtest.NewServer(t)
	path := filepath.Join(b.dir, "mine.yaml")
	db := filepath.Join(b.dir, "bot.db")
	code, out, errOut := b.runInit(t, path, []string{
		b.model.URL(), "sk-init-test-key-0123456789", llmtest.DefaultModel,
		tg.Token(), // Telegram
		"",         // no Discord
		"",         // no Slack
		db,
	}, "--telegram-api-url", tg.URL())
	require.Equal(t, 0, code, "out:\n%s\nerr:\n%s", out, errOut)
	require.Contains(t, out, "Checking the model… ok: "+llmtest.DefaultModel+" answers at ")
	require.Contains(t, out, "Checking telegram… ok: ")
	require.Contains(t, out, "Checking the database… ok: sqlite "+db+" does not exist yet")
	require.Contains(t, out, "Wrote "+path)
	require.NotContains(t, out, "sk-init-test-key-0123456789")
	require.NotContains(t, out, tg.Token())

	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "it holds keys: the owner's only")
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, b.model.URL(), cfg.LLM.BaseURL)
	require.Equal(t, "sk-init-test-key-0123456789", cfg.LLM.APIKey.Reveal())
	require.Equal(t, db, cfg.Store.DSN.Reveal())
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), cfg.HTTP.APIToken.Reveal())
	require.True(t, cfg.Adapters["telegram"].Enabled)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Contains(t, string(raw), "# Parley's config, written by parley init.")

	code, doctorOut, _ := b.cli(path, "doctor")
	require.Equal(t, 0, code, "doctor on the written file:\n%s", doctorOut)
}

// A refused key is said at once, with what to fix, and asked again.
func TestInitAsksAgainAfterARefusedKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
	b.model.SetAPIKey("sk-the-right-key-0123456789")
	path := filepath.Join(b.dir, "config.yaml")
	code, out, _ := b.runInit(t, path, []string{
		b.model.URL(), "sk-a-wrong-key-0123456789", "",
		"n",                                   // do not keep it
		"", "sk-the-right-key-0123456789", "", // the URL and model as before
		"", "", "", "",
	})
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "Checking the model… FAIL: the API key was refused")
	require.Contains(t, out, "Keep it all the same? (y/N)")
	require.Equal(t, 2, strings.Count(out, "Checking the model…"))
	require.NotContains(t, out, "sk-a-wrong-key-0123456789")
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, "sk-the-right-key-0123456789", cfg.LLM.APIKey.Reveal())
}

// An existing file is replaced only when the owner says so, or --force.
func TestInitNeverOverwritesUnasked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := filepath.Join(b.dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("# mine\n"), 0o600))

	code, out, errOut := b.runInit(t, path, []string{"n"})
	require.Equal(t, 2, code)
	require.Contains(t, out, path+" exists. Replace it? (y/N)")
	require.Contains(t, errOut, "kept as it is")
	code, _, errOut = b.runInit(t, path, nil, "--non-interactive", "--no-checks")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "exists: pass --force to replace it")
	raw, _ := os.ReadFile(path)
	require.Equal(t, "# mine\n", string(raw))

	code, _, errOut = b.runInit(t, path, nil, "--non-interactive", "--no-checks", "--force", "--api-key-env", "OPENAI_API_KEY")
	require.Equal(t, 0, code, errOut)
	raw, _ = os.ReadFile(path)
	require.Contains(t, string(raw), "api_key: ${OPENAI_API_KEY}")
}

// A script: flags only. A check that fails fails the command, naming the
// part; --no-checks writes the file all the same.
func TestInitNonInteractive(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
	tg := telegramtest.NewServer(t)
	path := filepath.Join(b.dir, "config.yaml")
	code, _, errOut := b.runInit(t, path, nil, "--non-interactive", "--model-url", b.model.URL(), "--api-key", "sk-x-0123456789",
		"--telegram-token", "123:not-a-token", "--telegram-api-url", tg.URL())
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "init: telegram: ")
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written")

	code, out, errOut := b.runInit(t, path, nil, "--non-interactive", "--model-url", b.model.URL(), "--api-key", "sk-x-0123456789",
		"--telegram-token", tg.Token(), "--telegram-api-url", tg.URL(), "--database", filepath.Join(b.dir, "x.db"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Checking telegram… ok")
	require.NotContains(t, out, "Enter takes", "no questions")
}

// A database that cannot be reached is said before anything is written.
func TestInitChecksTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })
	path := filepath.Join(b.dir, "config.yaml")
	code, out, errOut := b.runInit(t, path, nil, "--non-interactive", "--model-url", b.model.URL(), "--api-key", "sk-x-0123456789",
		"--database", "postgres://parley@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "Checking the database… FAIL: ")
	require.Contains(t, errOut, "init: the database: ")
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}
