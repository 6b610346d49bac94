package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/mcp/mcptest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// doctorBundle is a bot with every kind of part, each on its fake: the
// model, Telegram, Discord, Slack in socket mode, the web chat, an MCP
// server over HTTP, and a SQLite file. A test changes what it breaks
// before writing the config.
type doctorBundle struct {
	*testBundle
	telegram *telegramtest.Server
	discord  *discordtest.Server
	slack    *slacktest.Server
	// What the config says; the fakes' own values unless a test changes
	// them.
	modelURL, driver, dsn                           string
	telegramToken, discordToken, slackBot, slackApp string
	mcpServers                                      string
	// extra is more YAML at the end.
	extra string
}

// mcpHeader is a secret of the MCP server's config.
const mcpHeader = "Bearer mcp-header-DONOTLEAK-77"

func setupDoctor(t *testing.T, modelOpts ...llmtest.Option) *doctorBundle {
	t.Helper()
	b := &doctorBundle{testBundle: setup(t)}
	// The model lists what it serves, as OpenAI does, and refuses others.
	b.model = llmtest.NewServer(t, append([]llmtest.Option{llmtest.WithModels("test-model", "whisper-1")}, modelOpts...)...)
	b.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("OK") })
	b.telegram, b.discord, b.slack = telegramtest.NewServer(t), discordtest.NewServer(t), slacktest.NewServer(t)
	mcpURL := mcptest.NewHTTPServer(t, mcptest.Tool{Name: "lookup"}, mcptest.Tool{Name: "define"})
	b.modelURL, b.driver, b.dsn = b.model.URL(), "sqlite", b.dbPath
	b.telegramToken, b.discordToken = b.telegram.Token(), b.discord.Token()
	b.slackBot, b.slackApp = b.slack.BotToken(), b.slack.AppToken()
	b.mcpServers = fmt.Sprintf("    tools: {url: %q, headers: {Authorization: %q}}\n", mcpURL, mcpHeader)
	return b
}

// config writes the bundle's config and returns its path.
func (b *doctorBundle) config(t *testing.T) string {
	t.Helper()
	path := filepath.Join(b.dir, "config.yaml")
	cfg := fmt.Sprintf(`store: {driver: %s, dsn: %q}
llm:
  base_url: %s
  api_key: ${OPENAI_API_KEY}
  model: test-model
%s
adapters:
  web: {enabled: true}
  telegram: {enabled: true, token: %q, api_url: %q}
  discord: {enabled: true, token: %q, api_url: %q}
  slack: {enabled: true, mode: socket, bot_token: %q, app_token: %q, api_url: %q}
mcp:
  servers:
%shttp:
  listen: 127.0.0.1:0
  api_token: ${PARLEY_API_TOKEN}
%s`, b.driver, b.dsn, b.modelURL, b.llmExtra, b.telegramToken, b.telegram.URL(), b.discordToken, b.discord.URL(),
		b.slackBot, b.slackApp, b.slack.APIURL(), b.mcpServers, b.extra)
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// migrate creates the schema of the SQLite file.
func (b *doctorBundle) migrate(t *testing.T) {
	t.Helper()
	require.NoError(t, b.openStoreFile(t).Migrate(context.Background()))
}

// doctor runs `parley doctor` on the bundle's config and returns its exit
// status, the lines it printed and its standard error, having checked
// that neither holds a secret.
func (b *doctorBundle) doctor(t *testing.T) (int, []string, string) {
	t.Helper()
	code, out, stderr := b.cli(b.config(t), "doctor")
	secrets := []string{b.telegram.Token(), b.discord.Token(), b.slack.BotToken(), b.slack.AppToken(), mcpHeader}
	for _, s := range b.env {
		secrets = append(secrets, s)
	}
	for _, s := range secrets {
		require.NotContains(t, out, s, "a secret in the report")
		require.NotContains(t, stderr, s, "a secret in the log")
	}
	return code, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), stderr
}

// wellLines is what the doctor prints when every part is well.
func (b *doctorBundle) wellLines() []string {
	return []string{
		"llm        ok    test-model answers at " + b.model.URL(),
		"discord    ok    @parley-test (id 900000000000000001), gateway " + b.discord.GatewayURL() + ", 999 of 1000 session starts left today; streaming: edits, an update at most every 1s",
		"slack      ok    @parley (user U0BOT00001) in Fake, socket mode (apps.connections.open ok); streaming: stream, an update at most every 600ms",
		"telegram   ok    @parley_test_bot (id 999000), polling; streaming: drafts, an update at most every 400ms",
		"web        ok    nothing to probe; streaming: events, an update at most every 400ms",
		fmt.Sprintf("store      ok    sqlite %s, schema version %d (current)", b.dbPath, store.LatestSchemaVersion()),
		"mcp:tools  ok    2 tools",
	}
}

// TestDoctorAllWell: every part answers, one line each in a fixed order,
// exit 0; the model was asked for one token, and nothing was sent,
// started or registered on the way.
func TestDoctorAllWell(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	b.migrate(t)
	code, lines, stderr := b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Equal(t, b.wellLines(), lines)

	reqs := b.model.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "test-model", reqs[0].Chat.Model)
	require.Equal(t, 1, reqs[0].MaxTokens())
	require.Equal(t, "Bearer "+b.env["OPENAI_API_KEY"], reqs[0].Authorization)
	for _, m := range []string{"getUpdates", "deleteWebhook", "setWebhook", "setMyCommands"} {
		require.Zero(t, b.telegram.Calls(m), m)
	}
	require.Zero(t, b.discord.Identifies())
	require.Zero(t, b.slack.Connections())
}

// With bot.streaming.enabled false every platform's line says so, and
// names the key.
func TestDoctorSaysStreamingIsOff(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	b.extra = "bot:\n  streaming: {enabled: false}\n"
	b.migrate(t)
	code, lines, stderr := b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	want := b.wellLines()
	for i, l := range want {
		if k := strings.Index(l, "; streaming: "); k >= 0 {
			want[i] = l[:k] + "; streaming: off (bot.streaming.enabled is false)"
		}
	}
	require.Equal(t, want, lines)
}

// The light model is asked too when it is another one.
func TestDoctorAsksTheLightModel(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t, llmtest.WithModels("test-model", "test-light", "whisper-1"))
	b.llmExtra = "  light_model: test-light"
	b.migrate(t)
	code, lines, stderr := b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Equal(t, "llm        ok    test-model and test-light answer at "+b.model.URL(), lines[0])
	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"test-model", "test-light"}, []string{reqs[0].Chat.Model, reqs[1].Chat.Model})
}

// A server without GET /models is asked; so is one that serves a model it
// does not list (llama.cpp answers to any name).
func TestDoctorModelListMissingOrIncomplete(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	b.migrate(t)
	noList := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, b.model.URL()+strings.TrimPrefix(r.URL.Path, "/v1"), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(noList.Close)
	b.modelURL = noList.URL + "/v1"
	code, lines, stderr := b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Equal(t, "llm        ok    test-model answers at "+noList.URL+"/v1", lines[0])

	lenient := llmtest.NewServer(t, llmtest.WithModel("/models/llama-3.2-3b.gguf"))
	lenient.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("OK") })
	b.modelURL = lenient.URL()
	code, lines, stderr = b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Equal(t, "llm        ok    test-model answers at "+lenient.URL()+"; test-model answers although GET /models does not list it; "+
		`llm.transcription.model whisper-1 is not listed, so voice notes may not be transcribed (model: "" turns them off)`, lines[0])
}

// Each part that fails says so on its line, with the key to fix; the
// others still pass; the exit status is 1.
func TestDoctorNamesTheKeyToFix(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		breakIt func(t *testing.T, b *doctorBundle)
		line    int
		want    func(b *doctorBundle) string
	}{
		"wrong model name": {
			breakIt: func(t *testing.T, b *doctorBundle) {
				b.model = llmtest.NewServer(t, llmtest.WithModels("test-mode", "test-model-2", "gpt-4o", "whisper-1"))
				b.modelURL = b.model.URL()
			},
			want: func(b *doctorBundle) string {
				return `llm        FAIL  model "test-model" is not among the 4 models ` + b.model.URL() + ` lists (close: test-mode, test-model-2): fix llm.model`
			},
		},
		"refused API key": {
			breakIt: func(t *testing.T, b *doctorBundle) {
				b.model = llmtest.NewServer(t, llmtest.WithModels("test-model"), llmtest.WithAPIKey("sk-the-right-one-0000"))
				b.modelURL = b.model.URL()
			},
			want: func(*doctorBundle) string {
				return "llm        FAIL  the API key was refused (401 Unauthorized): fix llm.api_key"
			},
		},
		"no API key": {
			breakIt: func(t *testing.T, b *doctorBundle) {
				b.model = llmtest.NewServer(t, llmtest.WithModels("test-model"), llmtest.WithAPIKey("sk-the-right-one-0000"))
				b.modelURL = b.model.URL()
				delete(b.env, "OPENAI_API_KEY")
			},
			want: func(*doctorBundle) string {
				return "llm        FAIL  the server wants an API key and llm.api_key is empty (401 Unauthorized): set llm.api_key"
			},
		},
		"refused telegram token": {
			breakIt: func(_ *testing.T, b *doctorBundle) { b.telegramToken = "123456:REVOKED-token-xyz" },
			line:    3,
			want: func(*doctorBundle) string {
				return "telegram   FAIL  the token was refused (401 Unauthorized): fix adapters.telegram.token"
			},
		},
		"refused discord token": {
			breakIt: func(_ *testing.T, b *doctorBundle) { b.discordToken = "MTIz.wrong.token" },
			line:    1,
			want: func(*doctorBundle) string {
				return "discord    FAIL  the token was refused (401 Unauthorized): fix adapters.discord.token"
			},
		},
		"refused slack bot token": {
			breakIt: func(_ *testing.T, b *doctorBundle) { b.slackBot = "xoxb-wrong-0000" },
			line:    2,
			want: func(*doctorBundle) string {
				return "slack      FAIL  the bot token was refused (invalid_auth): fix adapters.slack.bot_token"
			},
		},
		"refused slack app token": {
			breakIt: func(_ *testing.T, b *doctorBundle) { b.slackApp = "xapp-wrong-0000" },
			line:    2,
			want: func(*doctorBundle) string {
				return "slack      FAIL  the app token was refused by apps.connections.open (invalid_auth): fix adapters.slack.app_token " +
					"(an xapp- token with connections:write, and Socket Mode on in the app's settings)"
			},
		},
		"store in a directory that does not exist": {
			breakIt: func(t *testing.T, b *doctorBundle) { b.dsn = filepath.Join(b.dir, "gone", "parley.db") },
			line:    5,
			want: func(b *doctorBundle) string {
				return fmt.Sprintf("store      FAIL  sqlite %s: the directory %s does not exist: fix store.dsn (or create the directory)",
					filepath.Join(b.dir, "gone", "parley.db"), filepath.Join(b.dir, "gone"))
			},
		},
		"pending migration": {
			breakIt: func(t *testing.T, b *doctorBundle) {
				// A database one migration behind this build, as after an upgrade.
				st := b.openStoreFile(t)
				require.NoError(t, st.DB().Exec(`DELETE FROM schema_migrations WHERE version = ?`, store.LatestSchemaVersion()).Error)
			},
			line: 5,
			want: func(b *doctorBundle) string {
				latest := store.LatestSchemaVersion()
				pending, err := b.openStoreFile(t).PendingMigrations(context.Background())
				require.NoError(t, err)
				return fmt.Sprintf("store      FAIL  sqlite %s is at schema version %d and 1 migration is pending (%d %s): run parley migrate",
					b.dbPath, latest-1, latest, pending[0].Name)
			},
		},
		"store ahead of the build": {
			breakIt: func(t *testing.T, b *doctorBundle) {
				st := b.openStoreFile(t)
				require.NoError(t, st.DB().Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from the future', '2099-01-01T00:00:00.000000Z')`,
					store.LatestSchemaVersion()+1).Error)
			},
			line: 5,
			want: func(b *doctorBundle) string {
				return fmt.Sprintf("store      FAIL  sqlite %s is at schema version %d, newer than this build's %d: run the parley that migrated it, or a newer one",
					b.dbPath, store.LatestSchemaVersion()+1, store.LatestSchemaVersion())
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupDoctor(t)
			b.migrate(t)
			tc.breakIt(t, b)
			code, lines, stderr := b.doctor(t)
			require.Equal(t, 1, code, "stderr:\n%s", stderr)
			require.Contains(t, stderr, "parley: doctor: 1 of 7 checks failed")
			want := b.wellLines()
			want[tc.line] = tc.want(b)
			require.Equal(t, want, lines)
		})
	}
}

func TestDoctorUnreachableModel(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	b.migrate(t)
	b.modelURL = closedURL(t) + "/v1"
	code, lines, _ := b.doctor(t)
	require.Equal(t, 1, code)
	require.Regexp(t, `^llm        FAIL  cannot reach `+b.modelURL+` \(.*connection refused\): fix llm\.base_url$`, lines[0])
}

// closedURL is the URL of a port nothing listens on any more.
func closedURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func TestDoctorMCPServerThatDoesNotStart(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	b.migrate(t)
	missing := filepath.Join(b.dir, "no-such-mcp-server")
	b.mcpServers += fmt.Sprintf("    bad: {command: %q, env: {TOKEN: mcp-env-DONOTLEAK-5}}\n", missing)
	code, lines, stderr := b.doctor(t)
	require.Equal(t, 1, code, "stderr:\n%s", stderr)
	require.Contains(t, stderr, "parley: doctor: 1 of 8 checks failed")
	require.NotContains(t, strings.Join(lines, "\n")+stderr, "mcp-env-DONOTLEAK-5")
	want := b.wellLines()
	// The servers are in name order: bad before tools.
	require.Equal(t, want[:6], lines[:6])
	t.Log(lines[6])
	require.Regexp(t, `^mcp:bad    FAIL  .*no-such-mcp-server.*: fix mcp\.servers\.bad\.command$`, lines[6])
	require.Equal(t, "mcp:tools  ok    2 tools", lines[7])
}

// The store line on PostgreSQL: well once migrated, and an unreachable
// server named without its password.
func TestDoctorOnPostgres(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	b.driver, b.dsn = "postgres", "postgres://parley:pg-DONOTLEAK-pass@127.0.0.1:1/parley?sslmode=disable&connect_timeout=5"
	code, lines, stderr := b.doctor(t)
	require.Equal(t, 1, code, "stderr:\n%s", stderr)
	require.Regexp(t, `^store      FAIL  postgres 127\.0\.0\.1:1/parley: cannot open it \(.+\): fix store\.dsn$`, lines[5])
	require.NotContains(t, strings.Join(lines, "\n")+stderr, "pg-DONOTLEAK-pass")

	dsn := storetest.PostgresDSN(t) // skips without PARLEY_TEST_POSTGRES_DSN
	b.dsn = dsn
	code, lines, stderr = b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Regexp(t, `^store      ok    postgres \S+ answers and has no schema yet: parley run creates it \(schema version \d+\)$`, lines[5])

	st, err := store.Open(context.Background(), store.Options{Driver: "postgres", DSN: dsn})
	require.NoError(t, err)
	require.NoError(t, st.Migrate(context.Background()))
	require.NoError(t, st.Close())
	code, lines, stderr = b.doctor(t)
	require.Equal(t, 0, code, "stderr:\n%s", stderr)
	require.Regexp(t, fmt.Sprintf(`^store      ok    postgres \S+, schema version %d \(current\); pgvector [0-9.]+ \(memory by meaning searches with it\)$`, store.LatestSchemaVersion()), lines[5])
}

// A bad config is exit 2, naming file, line and key, before any probe.
func TestDoctorBadConfigExitsTwo(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t)
	path := b.config(t)
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	bad := strings.Replace(string(raw), "  telegram: {enabled: true, token:", "  telegram: {enabled: true, tokn: x, token:", 1)
	require.NoError(t, os.WriteFile(path, []byte(bad), 0o600))
	code, out, stderr := b.cli(path, "doctor")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "config.yaml:9: adapters.telegram.tokn: unknown key")
	require.Empty(t, b.model.Requests(), "nothing was probed")
	require.Zero(t, b.telegram.Calls("getMe"))

	// A bad value the adapter itself refuses is a bad config too.
	b.slackApp = "not-an-app-token"
	code, out, stderr = b.cli(b.config(t), "doctor")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, stderr, `app_token must start with "xapp-"`)
	require.NotContains(t, stderr, "not-an-app-token")

	// So is a plugin's, found when it is provisioned.
	b.slackApp = b.slack.AppToken()
	b.extra = fmt.Sprintf("plugins:\n  persona: {file: %q}\n", filepath.Join(b.dir, "no-such-persona.md"))
	code, out, stderr = b.cli(b.config(t), "doctor")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "config.yaml:19: plugins.persona: reading persona file")

	// And no adapter at all.
	b.extra = ""
	path = b.config(t)
	raw, err = os.ReadFile(path)
	require.NoError(t, err)
	noAdapters := strings.ReplaceAll(string(raw), "enabled: true", "enabled: false")
	require.NoError(t, os.WriteFile(path, []byte(noAdapters), 0o600))
	code, out, stderr = b.cli(path, "doctor")
	require.Equal(t, 2, code)
	require.Empty(t, out)
	require.Contains(t, stderr, "no adapter is enabled")
	require.Empty(t, b.model.Requests(), "nothing was probed")
}

func TestDoctorSlowModel(t *testing.T) {
	t.Parallel()
	b := setupDoctor(t, llmtest.WithLatency(waitFor))
	b.llmExtra = "  timeout: 100ms"
	b.migrate(t)
	code, lines, _ := b.doctor(t)
	require.Equal(t, 1, code)
	require.Equal(t, "llm        FAIL  no answer from "+b.model.URL()+" in time (llm.timeout is 100ms): is the server up? fix llm.base_url (or raise llm.timeout)", lines[0])
}

// With several bots the doctor prints a block per bot (its lines named
// BOT/llm, BOT/telegram) and the shared store last; a failing part names
// its bot.
func TestDoctorSeveralBots(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tgAda := telegramtest.NewServer(t)
	tgBob := telegramtest.NewServer(t, telegramtest.WithToken("222222:TEST-token-bob"), telegramtest.WithBotUser(222222, "bob_test_bot"))
	tgBob.RevokeToken()
	cfg := b.writeConfig(t, fmt.Sprintf(`bots:
  - id: ada
    adapters:
      web: {enabled: false}
      telegram: {token: %q, api_url: %q}
  - id: bob
    adapters:
      web: {enabled: false}
      telegram: {token: %q, api_url: %q}
`, tgAda.Token(), tgAda.URL(), tgBob.Token(), tgBob.URL()))
	code, out, stderr := b.cli(cfg, "doctor")
	require.Equal(t, 1, code, "stderr:\n%s", stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 5, out)
	for i, prefix := range []string{"ada/llm ", "ada/telegram ", "bob/llm ", "bob/telegram ", "store "} {
		require.True(t, strings.HasPrefix(lines[i], prefix), "line %d is %q", i, lines[i])
	}
	require.Contains(t, lines[1], "ok    @parley_test_bot")
	require.Contains(t, lines[3], "FAIL")
	require.NotContains(t, out, tgBob.Token())
}
