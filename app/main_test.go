package app

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/adapters/web"
	"github.com/parleybot/parley/app/modules"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

const waitFor = 15 * time.Second

type testBundle struct {
	dir    string
	dbPath string
	model  *llmtest.Server
	env    map[string]string
	// llmExtra is more YAML under llm:, each line indented two spaces.
	llmExtra string
	// llmTimeout is llm.timeout, 2s when empty.
	llmTimeout string
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	dir := t.TempDir()
	return &testBundle{
		dir:    dir,
		dbPath: filepath.Join(dir, "parley.db"),
		model:  llmtest.NewServer(t),
		env: map[string]string{
			"OPENAI_API_KEY":   "sk-live-DONOTLEAK-1234567890",
			"PARLEY_API_TOKEN": "api-token-DONOTLEAK-abcdef",
		},
	}
}

func (b *testBundle) lookup(k string) (string, bool) {
	v, ok := b.env[k]
	return v, ok
}

// cli runs a parley command in-process with the config at cfg and returns
// its exit status, standard output and standard error.
func (b *testBundle) cli(cfg string, args ...string) (int, string, string) {
	var out, errOut coretest.Logs
	code := Run(context.Background(), append(args, "-c", cfg), IO{In: strings.NewReader(""), Out: &out, Err: &errOut}, b.lookup)
	return code, out.String(), errOut.String()
}

// writeConfig writes a config that points at the fake model and a fresh
// SQLite file, with extra YAML appended.
func (b *testBundle) writeConfig(t testing.TB, extra string) string {
	t.Helper()
	return b.writeConfigFor(t, "sqlite", b.dbPath, extra)
}

func (b *testBundle) writeConfigFor(t testing.TB, driver, dsn, extra string) string {
	t.Helper()
	path := filepath.Join(b.dir, "config.yaml")
	cfg := fmt.Sprintf(`store:
  driver: %s
  dsn: "%s"
  spool: {dir: "%s"}
llm:
  base_url: %s
  api_key: ${OPENAI_API_KEY}
  model: test-model
  timeout: %s
  max_retries: 1
%s
http:
  listen: 127.0.0.1:0
  api_token: ${PARLEY_API_TOKEN}
log:
  level: debug
%s`, driver, dsn, filepath.Join(b.dir, "spool"), b.model.URL(), cmp.Or(b.llmTimeout, "2s"), b.llmExtra, extra)
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// running is a `parley run` in-process.
type running struct {
	addr   string
	stderr *coretest.Logs
	cancel context.CancelFunc
	code   chan int
}

func (b *testBundle) start(t testing.TB, cfgPath string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{stderr: &coretest.Logs{}, cancel: cancel, code: make(chan int, 1)}
	go func() {
		r.code <- Run(ctx, []string{"run", "-c", cfgPath}, IO{In: strings.NewReader(""), Out: io.Discard, Err: r.stderr}, b.lookup)
	}()
	re := regexp.MustCompile(`http server listening.* addr=(\S+)`)
	require.Eventually(t, func() bool {
		m := re.FindStringSubmatch(r.stderr.String())
		if m == nil {
			return false
		}
		r.addr = m[1]
		return true
	}, waitFor, 10*time.Millisecond, "parley run did not start; stderr:\n%s", r.stderr)
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop sends the equivalent of SIGTERM and expects a clean exit.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case code := <-r.code:
		require.Equal(t, 0, code, "stderr:\n%s", r.stderr)
	case <-time.After(waitFor):
		t.Fatalf("parley run did not stop; stderr:\n%s", r.stderr)
	}
}

// sseReader reads events from the web chat's event stream.
type sseReader struct {
	resp   *http.Response
	events chan [2]string
}

func openEvents(t testing.TB, addr, client string) *sseReader {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/web/events?client_id=" + client)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := &sseReader{resp: resp, events: make(chan [2]string, 16)}
	sc := bufio.NewScanner(resp.Body)
	ready := make(chan struct{})
	go func() {
		defer close(s.events)
		var name, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ": connected"):
				close(ready)
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			case line == "" && name != "":
				s.events <- [2]string{name, data}
				name, data = "", ""
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(waitFor):
		t.Fatal("event stream did not open")
	}
	t.Cleanup(func() { resp.Body.Close() })
	return s
}

// nextMessage returns the text of the next "message" event.
func (s *sseReader) nextMessage(t testing.TB) string {
	t.Helper()
	return s.nextWireMessage(t).Text
}

func postMessage(t testing.TB, addr, client, text string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"client_id": client, "name": "Ada", "text": text})
	resp, err := http.Post("http://"+addr+"/web/messages", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

func (b *testBundle) storedMessages(t *testing.T, client string) []core.Message {
	t.Helper()
	return b.storedMessagesOn(t, web.Platform, client)
}

// openStoreFile opens the test's SQLite file, closed at cleanup.
func (b *testBundle) openStoreFile(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Driver: "sqlite", DSN: b.dbPath})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestWebChatEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	b.model.Enqueue(llmtest.Text("Hello Ada, nice to meet you."))

	const client = "client-0001"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "hi, I'm Ada")
	require.Equal(t, "Hello Ada, nice to meet you.", events.nextMessage(t))

	req := b.model.Requests()[0]
	msgs := req.Messages()
	require.Equal(t, "system", msgs[0].Role)
	require.Contains(t, msgs[0].Content, "You are Subaru", "the default persona is the system prompt")
	require.Equal(t, "user", msgs[len(msgs)-1].Role)
	require.Equal(t, "hi, I'm Ada", msgs[len(msgs)-1].Content)
	require.Contains(t, msgs[0].Content, "\n\nNow for them: ", "the turn note (the user's local time) ends the system message")
	require.Equal(t, "Bearer sk-live-DONOTLEAK-1234567890", req.Authorization)

	r.stop(t) // the reply is stored before the run completes; stopping drains it
	stored := b.storedMessages(t, client)
	require.Len(t, stored, 2)
	require.Equal(t, int64(1), stored[0].Seq)
	require.Equal(t, "hi, I'm Ada", stored[0].Content)
	require.Equal(t, int64(2), stored[1].Seq)
	require.Equal(t, "Hello Ada, nice to meet you.", stored[1].Content)
	require.Equal(t, core.SourceReply, stored[1].Source)
}

func TestHealthz(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	resp, err := http.Get("http://" + r.addr + "/healthz")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		Status     string
		Components map[string]string
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "ok", body.Status)
	require.Equal(t, "ok", body.Components["store"])
}

func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// The model rejects the key and echoes it, as OpenAI's 401 does.
	b.model.Enqueue(llmtest.Status(401).WithErrorMessage("Incorrect API key provided: sk-live-DONOTLEAK-1234567890"))
	r := b.start(t, b.writeConfig(t, ""))
	const client = "client-0002"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "hello")
	require.Equal(t, config.DefaultFailureMessage, events.nextMessage(t))
	r.stop(t)

	logs := r.stderr.String()
	require.Contains(t, logs, "turn failed", "the failure was logged")
	for _, secret := range b.env {
		require.NotContains(t, logs, secret)
	}
	// Nor in the database: run errors and records.
	raw, err := os.ReadFile(b.dbPath)
	require.NoError(t, err)
	for _, secret := range b.env {
		require.False(t, bytes.Contains(raw, []byte(secret)), "secret in the database file")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: b.dbPath})
	require.NoError(t, err)
	defer st.Close()
	conv, err := st.ConversationByThread(ctx, web.Platform, client)
	require.NoError(t, err)
	runs, err := st.Runs(ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.Equal(t, core.RunFailed, runs[0].Status)
	require.Contains(t, runs[0].Error, "401")
	require.NotContains(t, runs[0].Error, "DONOTLEAK")
}

func TestBadConfigExitsTwo(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		yaml string
		want string
	}{
		"unknown key":      {"llm:\n  modle: x\n", "config.yaml:2: llm.modle: unknown key"},
		"bad duration":     {"runs:\n  debounce: soon\n", "config.yaml:2: runs.debounce"},
		"unknown zone":     {"bot:\n  timezone: Mars/Olympus\n", "config.yaml:2: bot.timezone"},
		"unknown plugin":   {"plugins:\n  persona: {}\n  telepathy: {enabled: true}\n", "config.yaml:3: plugins.telepathy: unknown plugin"},
		"plugin key typo":  {"plugins:\n  persona:\n    nmae: Bob\n", "config.yaml:3: plugins.persona.nmae: unknown key"},
		"unknown adapter":  {"adapters:\n  icq: {}\n", "config.yaml:2: adapters.icq: unknown adapter"},
		"adapter key typo": {"adapters:\n  web:\n    titel: x\n", "config.yaml:3: adapters.web.titel: unknown key"},
		"renamed adapter": {"adapters:\n  web: {}\n  console:\n    user: ada\n",
			"config.yaml:3: adapters.console: was renamed to adapters.terminal: rename the section"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "config.yaml")
			require.NoError(t, os.WriteFile(path, []byte(tc.yaml), 0o600))
			var stderr coretest.Logs
			code := Run(context.Background(), []string{"run", "-c", path}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}, func(string) (string, bool) { return "", false })
			require.Equal(t, 2, code)
			require.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestBadFlagAndMissingConfigExitTwo(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	for _, args := range [][]string{
		{"run", "--no-such-flag"},
		{"run", "-c", filepath.Join(t.TempDir(), "missing.yaml")},
		{"frobnicate"},
		{"run", "extra-arg"},
	} {
		var stderr coretest.Logs
		code := Run(context.Background(), args, IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr}, noEnv)
		require.Equal(t, 2, code, "args %v: %s", args, stderr.String())
	}
}

func TestVersionAndMigrate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var out coretest.Logs
	require.Equal(t, 0, Run(context.Background(), []string{"version"}, IO{Out: &out, Err: io.Discard}, b.lookup))
	require.True(t, strings.HasPrefix(out.String(), "parley "))

	out = coretest.Logs{}
	cfg := b.writeConfig(t, "")
	require.Equal(t, 0, Run(context.Background(), []string{"migrate", "-c", cfg}, IO{Out: &out, Err: io.Discard}, b.lookup))
	require.Regexp(t, `schema at version \d+ \(sqlite\)`, out.String())
	_, err := os.Stat(b.dbPath)
	require.NoError(t, err)
}

func TestChatInTheTerminal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Enqueue(llmtest.Text("Hi from the terminal!"))
	cfg := b.writeConfig(t, "adapters:\n  terminal:\n    user: ada\n")
	var out, stderr coretest.Logs
	code := Run(context.Background(), []string{"chat", "-c", cfg}, IO{In: strings.NewReader("hello there\n"), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	require.Contains(t, out.String(), "Subaru: Hi from the terminal!")

	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: b.dbPath})
	require.NoError(t, err)
	defer st.Close()
	conv, err := st.ConversationByThread(ctx, terminal.Platform, "console:ada")
	require.NoError(t, err)
	msgs, err := st.Messages(ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Equal(t, "hello there", msgs[0].Content)
	require.Equal(t, "Hi from the terminal!", msgs[1].Content)
}

// The adapter was renamed from "console" to "terminal", but its platform
// id and thread ids were not: a conversation stored before the rename
// carries on, its history in the prompt.
func TestChatCarriesOnAConversationFromBeforeTheRename(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: b.dbPath})
	require.NoError(t, err)
	require.NoError(t, st.Migrate(ctx))
	before, err := st.RecordInbound(ctx, core.InboundRecord{Platform: "console", ChannelThreadID: "console:ada",
		ChannelUserID: "console:ada", DisplayName: "ada", Text: "my cat is called Miso", Now: time.Now().Add(-time.Minute)})
	require.NoError(t, err)
	require.NoError(t, st.Close())

	b.model.Enqueue(llmtest.Text("Miso, of course."))
	cfg := b.writeConfig(t, "adapters:\n  terminal:\n    user: ada\n")
	var out, stderr coretest.Logs
	code := Run(ctx, []string{"chat", "-c", cfg}, IO{In: strings.NewReader("what is my cat called?\n"), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	require.Contains(t, out.String(), "Subaru: Miso, of course.")

	conv := b.conversationOn(t, "console", "console:ada")
	require.Equal(t, before.Conversation.ID, conv.ID, "the same conversation, not a new one")
	msgs := b.storedMessagesOn(t, "console", "console:ada")
	require.Len(t, msgs, 3)
	require.Equal(t, []string{"my cat is called Miso", "what is my cat called?", "Miso, of course."},
		[]string{msgs[0].Content, msgs[1].Content, msgs[2].Content})
	reqs := b.model.Requests()
	require.NotEmpty(t, reqs)
	var prompt strings.Builder
	for _, m := range reqs[0].Messages() {
		prompt.WriteString(m.Content + "\n")
	}
	require.Contains(t, prompt.String(), "my cat is called Miso", "the model hears what was said before the rename")
}

// A config written before the rename, with adapters.console:, is refused
// by every command that builds the adapters: exit 2, with the file, the
// line and the key, and the section's new name.
func TestFormerConsoleAdapterSectionIsRefused(t *testing.T) {
	t.Parallel()
	for name, section := range map[string]string{
		"enabled":  "  console:\n    user: ada\n",
		"disabled": "  console: {enabled: false}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			cfg := b.writeConfig(t, "adapters:\n  web: {}\n"+section)
			raw, err := os.ReadFile(cfg)
			require.NoError(t, err)
			line := slices.IndexFunc(strings.Split(string(raw), "\n"), func(l string) bool { return strings.HasPrefix(l, "  console:") }) + 1
			require.Positive(t, line)
			want := fmt.Sprintf("%s:%d: adapters.console: was renamed to adapters.terminal: rename the section", cfg, line)
			for _, cmd := range []string{"chat", "run", "doctor"} {
				code, _, stderr := b.cli(cfg, cmd)
				require.Equal(t, 2, code, "%s: %s", cmd, stderr)
				require.Contains(t, stderr, want, cmd)
				require.NotContains(t, stderr, "unknown adapter", cmd)
			}
		})
	}
}

func TestRunOnPostgres(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dsn := storetest.PostgresDSN(t)
	r := b.start(t, b.writeConfigFor(t, "postgres", dsn, ""))
	b.model.Enqueue(llmtest.Text("Hello from PostgreSQL."))
	const client = "client-pg-01"
	events := openEvents(t, r.addr, client)
	postMessage(t, r.addr, client, "hi")
	require.Equal(t, "Hello from PostgreSQL.", events.nextMessage(t))
	r.stop(t)

	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "postgres", DSN: dsn})
	require.NoError(t, err)
	defer st.Close()
	conv, err := st.ConversationByThread(ctx, web.Platform, client)
	require.NoError(t, err)
	msgs, err := st.Messages(ctx, conv.ID)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	require.Equal(t, []int64{1, 2}, []int64{msgs[0].Seq, msgs[1].Seq})
	require.Equal(t, "Hello from PostgreSQL.", msgs[1].Content)
}

// Every section of config.example.yaml decodes into its registered module:
// the example documents real keys, not wishes.
func TestExampleConfigMatchesTheModules(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load("../config.example.yaml", func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	ctx := context.Background()
	env := core.Env{Logger: slog.New(slog.DiscardHandler), Clock: core.SystemClock{}, Location: time.UTC}
	for name, sec := range cfg.Adapters {
		info, ok := core.Adapters().Lookup(name)
		require.True(t, ok, "adapters.%s is not a registered adapter", name)
		require.NoError(t, sec.Decode(info.New()), "adapters.%s", name)
	}
	decoded, err := modules.DecodePlugins(cfg)
	require.NoError(t, err)
	on := 0
	for _, name := range core.Plugins().Names() {
		if strings.HasPrefix(name, "test_") {
			continue // registered by this package's tests, not shipped
		}
		if info, _ := core.Plugins().Lookup(name); info.OffByDefault {
			_, ok := cfg.Plugins[name]
			require.True(t, ok, "the example shows plugins.%s, which is off by default", name)
		} else {
			on++
		}
	}
	require.Len(t, decoded, on, "every plugin on by default is on in the example")
	for _, p := range decoded {
		info, _ := core.Plugins().Lookup(p.Name())
		require.Equal(t, info.New(), p, "plugins.%s in the example states the defaults", p.Name())
	}
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "x.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx, pluginMigrators()...))
	env.Store, env.Database = st, st.Database()
	plugins, err := modules.ProvisionPlugins(ctx, cfg, decoded, env)
	require.NoError(t, err)
	require.NotEmpty(t, plugins)
}

// Every mistake of a config is reported in one go, in file order, each
// with its file, line and key: two adapters without tokens, two plugins
// misspelt, a key misspelt inside a plugin, and a token from a variable
// that is not set, which the error names.
func TestBadConfigReportsEveryError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`adapters:
  telegram:
    token: ${TG_TOKEN_NOT_SET}
  discord: {enabled: true}
plugins:
  memroy: {}
  persona:
    nmae: Bob
  moood: {}
`), 0o600))
	var stderr coretest.Logs
	code := Run(context.Background(), []string{"run", "-c", path}, IO{In: strings.NewReader(""), Out: io.Discard, Err: &stderr},
		func(string) (string, bool) { return "", false })
	require.Equal(t, 2, code)
	var lines []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if i := strings.Index(l, "config.yaml:"); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	require.Equal(t, []string{
		"config.yaml:2: adapters.telegram: telegram adapter: token is required (set adapters.telegram.token, e.g. ${TELEGRAM_BOT_TOKEN}); adapters.telegram.token is ${TG_TOKEN_NOT_SET}, which is not set",
		"config.yaml:4: adapters.discord: discord adapter: token is required (set adapters.discord.token, e.g. ${DISCORD_BOT_TOKEN})",
		"config.yaml:6: plugins.memroy: unknown plugin (known: " + fmt.Sprint(core.Plugins().Names()) + ")",
		"config.yaml:8: plugins.persona.nmae: unknown key",
		"config.yaml:9: plugins.moood: unknown plugin (known: " + fmt.Sprint(core.Plugins().Names()) + ")",
	}, lines[:5], "stderr:\n%s", stderr.String())
}

// parley chat keeps its terminal for the conversation: no log line lands
// between the prompts (only errors would); --log-file keeps them all.
func TestChatKeepsLogLinesOffTheTerminal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Enqueue(llmtest.Text("Hi!"), llmtest.Text("Hi again!"))
	cfg := b.writeConfig(t, "adapters:\n  terminal:\n    user: ada\n")
	var out, stderr coretest.Logs
	code := Run(context.Background(), []string{"chat", "-c", cfg}, IO{In: strings.NewReader("hello\n"), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	require.Contains(t, out.String(), "Subaru: Hi!")
	require.Empty(t, stderr.String(), "nothing but the conversation on the terminal")
	require.NotContains(t, out.String(), "level=")

	logFile := filepath.Join(t.TempDir(), "chat.log")
	out, stderr = coretest.Logs{}, coretest.Logs{}
	code = Run(context.Background(), []string{"chat", "-c", cfg, "--log-file", logFile}, IO{In: strings.NewReader("again\n"), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	require.Contains(t, out.String(), "Subaru: Hi again!")
	require.Empty(t, stderr.String())
	logged, err := os.ReadFile(logFile)
	require.NoError(t, err)
	require.Contains(t, string(logged), "level=INFO msg=\"config loaded\"")
	require.Contains(t, string(logged), "msg=model ")
}
