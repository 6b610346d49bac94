package app

// The deployment files (Dockerfile, compose.yaml, deploy/parley.service)
// run commands of this binary with configs from deploy/. Images cannot be
// built or pulled where the tests run, so these tests read the files and
// run what they run, in-process: every command must be one the CLI
// accepts (a renamed command or flag fails here), every config a valid
// one with the environment the deployment gives it, and the commands that
// can run here (run, migrate, health; on PostgreSQL when it is available)
// do, with the paths the deployment writes to moved to a temporary folder.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/app/modules"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// repoFile is the path of a file at the repository's root.
func repoFile(name string) string { return filepath.Join("..", filepath.FromSlash(name)) }

func readRepoFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(repoFile(name))
	require.NoError(t, err)
	return string(data)
}

// The drain on SIGTERM (README, "Commands"): stop timeouts must exceed it.
const drainSeconds = 30

// requireAccepted checks that the CLI knows the command args names and
// accepts its flags and arguments, without running it.
func requireAccepted(t *testing.T, where string, args []string) *configArg {
	t.Helper()
	root := newRoot(IO{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, lookupIn(nil))
	cmd, rest, err := root.Find(args)
	require.NoError(t, err, "%s: %q", where, args)
	require.True(t, cmd != root, "%s: %q names no parley command", where, args)
	require.NoError(t, cmd.ParseFlags(rest), "%s: %q", where, args)
	require.NoError(t, cmd.ValidateArgs(cmd.Flags().Args()), "%s: %q", where, args)
	c := findConfigArg(args)
	require.NotNil(t, c, "%s: %q should name its config with -c (not rely on the working directory)", where, args)
	return c
}

// configArg is where a command names its config: args[index] is the path.
type configArg struct {
	args  []string
	index int
}

func (c *configArg) path() string { return c.args[c.index] }

// with returns the command with its config replaced by path.
func (c *configArg) with(path string) []string {
	out := append([]string(nil), c.args...)
	out[c.index] = path
	return out
}

func findConfigArg(args []string) *configArg {
	for i, a := range args {
		if (a == "-c" || a == "--config") && i+1 < len(args) {
			return &configArg{args: args, index: i + 1}
		}
	}
	return nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// requireEnvProvided checks that every ${VAR} without a default in the
// config file is one the deployment provides.
func requireEnvProvided(t *testing.T, file string, provided map[string]bool) {
	t.Helper()
	for _, m := range envRef.FindAllStringSubmatch(readRepoFile(t, file), -1) {
		if m[2] == "" {
			require.True(t, provided[m[1]], "%s reads ${%s}, which the deployment does not provide", file, m[1])
		}
	}
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// loadDeployConfig loads a config from deploy/ with env and checks that
// every adapter and plugin section it enables decodes into its module and
// validates, as parley run would before starting anything.
func loadDeployConfig(t *testing.T, file string, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Load(repoFile(file), lookupIn(env))
	require.NoError(t, err, file)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "modules.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx, pluginMigrators()...))
	menv := core.Env{Logger: slog.New(slog.DiscardHandler), Clock: core.SystemClock{}, Location: time.UTC, Store: st,
		Database: st.Database()}
	adapters, err := modules.BuildAdapters(ctx, cfg, menv, func(_ string, enabled bool) bool { return enabled })
	require.NoError(t, err, file)
	modules.CleanupAll(adapters)
	decoded, err := modules.DecodePlugins(cfg)
	require.NoError(t, err, file)
	plugins, err := modules.ProvisionPlugins(ctx, cfg, decoded, menv)
	require.NoError(t, err, file)
	modules.CleanupAll(plugins)
	return cfg
}

var listenLine = regexp.MustCompile(`(?m)^(\s*listen:\s*)\S+`)

// rewriteConfig writes a copy of a deploy/ config with old replaced by
// new (a data directory moved to a temporary one) and http.listen set to
// listen, and returns its path.
func rewriteConfig(t *testing.T, file, listen string, replace ...string) string {
	t.Helper()
	text := strings.NewReplacer(replace...).Replace(readRepoFile(t, file))
	require.Regexp(t, listenLine, text, "%s sets http.listen", file)
	text = listenLine.ReplaceAllString(text, "${1}"+listen)
	path := filepath.Join(t.TempDir(), filepath.Base(file))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// startCommand runs a `parley run` command in-process and waits until it
// serves.
func startCommand(t *testing.T, args []string, env map[string]string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{stderr: &coretest.Logs{}, cancel: cancel, code: make(chan int, 1)}
	go func() {
		r.code <- Run(ctx, args, IO{In: strings.NewReader(""), Out: io.Discard, Err: r.stderr}, lookupIn(env))
	}()
	re := regexp.MustCompile(`http server listening.*"?addr"?[=:]"?([0-9.:\[\]]+)`)
	require.Eventually(t, func() bool {
		select {
		case code := <-r.code:
			r.code <- code
			return true
		default:
		}
		m := re.FindStringSubmatch(r.stderr.String())
		if m == nil {
			return false
		}
		r.addr = m[1]
		return true
	}, waitFor, 10*time.Millisecond, "%q did not start; stderr:\n%s", args, r.stderr)
	require.NotEmpty(t, r.addr, "%q exited; stderr:\n%s", args, r.stderr)
	t.Cleanup(func() { r.stop(t) })
	return r
}

// runCommand runs a command to its end in-process.
func runCommand(args []string, env map[string]string) (int, string, string) {
	var out, errOut coretest.Logs
	code := Run(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errOut}, lookupIn(env))
	return code, out.String(), errOut.String()
}

// requireHealthy runs the health command args with a copy of the config
// file pointing at the running server, as the deployment's health check
// would, and expects exit 0 and an ok status.
func requireHealthy(t *testing.T, health *configArg, file string, r *running, env map[string]string, replace ...string) {
	t.Helper()
	cfg := rewriteConfig(t, file, r.addr, replace...)
	code, out, errOut := runCommand(health.with(cfg), env)
	require.Equal(t, 0, code, "%q: %s%s", health.args, out, errOut)
	var body struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(out), &body), out)
	require.Equal(t, "ok", body.Status)
}

// --- the Dockerfile ---

type dockerfile struct {
	buildRuns  []string // RUN lines of the stages before the last
	entrypoint []string
	cmd        []string
	health     []string
	user       string
	workdir    string
	volumes    []string
	expose     []string
	copies     map[string]string // container path -> repository path, last stage
	env        map[string]string // ENV of the last stage
}

// parseDockerfile reads the instructions the Dockerfile's stages run.
// ENTRYPOINT, CMD and HEALTHCHECK must be in exec (JSON) form, so parley
// is PID 1 and gets docker stop's SIGTERM.
func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	var lines []string
	var cur strings.Builder
	for _, l := range strings.Split(readRepoFile(t, "Dockerfile"), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	var d dockerfile
	var stageRuns []string
	execForm := func(instr, s string) []string {
		var argv []string
		require.NoError(t, json.Unmarshal([]byte(s), &argv), "Dockerfile: %s must be in exec form, got %s", instr, s)
		return argv
	}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			d.buildRuns = append(d.buildRuns, stageRuns...)
			stageRuns = nil
			d.entrypoint, d.cmd, d.health, d.user, d.workdir, d.volumes, d.expose = nil, nil, nil, "", "", nil, nil
			d.copies, d.env = map[string]string{}, map[string]string{}
		case "ENV":
			k, v, _ := strings.Cut(rest, "=")
			d.env[k] = v
		case "RUN":
			stageRuns = append(stageRuns, rest)
		case "ENTRYPOINT":
			d.entrypoint = execForm("ENTRYPOINT", rest)
		case "CMD":
			d.cmd = execForm("CMD", rest)
		case "HEALTHCHECK":
			i := strings.Index(rest, " CMD ")
			require.GreaterOrEqual(t, i, 0, "Dockerfile: HEALTHCHECK without CMD: %s", rest)
			d.health = execForm("HEALTHCHECK CMD", strings.TrimSpace(rest[i+len(" CMD "):]))
		case "USER":
			d.user = rest
		case "WORKDIR":
			d.workdir = rest
		case "VOLUME":
			d.volumes = append(d.volumes, strings.Fields(rest)...)
		case "EXPOSE":
			d.expose = append(d.expose, strings.Fields(rest)...)
		case "COPY":
			f := strings.Fields(rest)
			if len(f) == 2 {
				d.copies[f[1]] = f[0]
			}
		}
	}
	return d
}

// isParley reports whether a program is the parley binary.
func isParley(prog string) bool { return prog == "parley" || strings.HasSuffix(prog, "/parley") }

// deployEnv reads deploy/parley.env.example: the variables set in it, and
// those only shown in comments (# VAR=value), which the configs must
// also accept.
func deployEnv(t *testing.T) (set, optional map[string]string) {
	t.Helper()
	set, optional = map[string]string{}, map[string]string{}
	line := regexp.MustCompile(`^(#\s*)?([A-Z_][A-Z0-9_]*)=(.*)$`)
	for _, l := range strings.Split(readRepoFile(t, "deploy/parley.env.example"), "\n") {
		m := line.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if m[1] == "" {
			set[m[2]] = m[3]
		} else {
			optional[m[2]] = m[3]
		}
	}
	require.NotEmpty(t, set)
	return set, optional
}

func documented(envs ...map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, env := range envs {
		for k := range env {
			out[k] = true
		}
	}
	return out
}

func merged(envs ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, env := range envs {
		for k, v := range env {
			out[k] = v
		}
	}
	return out
}

// requireListenPort checks that http.listen is on the port a deployment
// publishes.
func requireListenPort(t *testing.T, cfg *config.Config, port string) {
	t.Helper()
	_, p, err := net.SplitHostPort(cfg.HTTP.Listen)
	require.NoError(t, err)
	require.Equal(t, port, p, "%s: http.listen %s is not on the published port", cfg.File, cfg.HTTP.Listen)
}

func TestDockerfileRunsCommandsParleyAccepts(t *testing.T) {
	t.Parallel()
	d := parseDockerfile(t)

	require.Contains(t, strings.Join(d.buildRuns, "\n"), "deploy/build.sh", "the image's binary is built by deploy/build.sh, as in CI")
	require.Equal(t, "10001:10001", d.user, "the image runs as uid 10001")
	require.Equal(t, []string{"/data"}, d.volumes)
	require.Equal(t, "/data", d.workdir)

	require.NotEmpty(t, d.entrypoint)
	require.True(t, isParley(d.entrypoint[0]), "ENTRYPOINT runs parley: %q", d.entrypoint)
	runArgs := append(append([]string(nil), d.entrypoint[1:]...), d.cmd...)
	require.Equal(t, "run", runArgs[0], "the image runs the bot by default: %q", runArgs)
	run := requireAccepted(t, "Dockerfile ENTRYPOINT+CMD", runArgs)
	require.NotEmpty(t, d.health, "the image has a HEALTHCHECK")
	require.True(t, isParley(d.health[0]), "HEALTHCHECK runs parley: %q", d.health)
	health := requireAccepted(t, "Dockerfile HEALTHCHECK", d.health[1:])
	require.Equal(t, run.path(), health.path(), "the health check reads the config the bot runs with")

	file, ok := d.copies[run.path()]
	require.True(t, ok, "the Dockerfile COPYs the config %s runs with", run.path())
	require.Equal(t, "deploy/config.docker.yaml", file)

	// The config loads with the environment deploy/parley.env.example
	// documents (docker run --env-file), also with its optional settings
	// on (the Telegram adapter then validates too).
	set, optional := deployEnv(t)
	requireEnvProvided(t, file, documented(set, optional))
	cfg := loadDeployConfig(t, file, set)
	loadDeployConfig(t, file, merged(set, optional))
	require.Equal(t, "sqlite", cfg.Store.Driver)
	require.True(t, strings.HasPrefix(cfg.Store.DSN.Reveal(), "/data/"), "the SQLite file %s is in the volume", cfg.Store.DSN.Reveal())
	require.Len(t, d.expose, 1)
	requireListenPort(t, cfg, d.expose[0])

	// Run the image's command with /data moved to a temporary folder, and
	// its health check against it.
	data := t.TempDir()
	model := llmtest.NewServer(t)
	env := merged(set, map[string]string{"OPENAI_BASE_URL": model.URL()})
	r := startCommand(t, run.with(rewriteConfig(t, file, "127.0.0.1:0", "/data/", data+"/")), env)
	requireHealthy(t, health, file, r, env, "/data/", data+"/")
	r.stop(t)
	_, err := os.Stat(filepath.Join(data, filepath.Base(cfg.Store.DSN.Reveal())))
	require.NoError(t, err, "the database is in the volume")
}

// --- compose.yaml ---

type composeService struct {
	Image       string            `yaml:"image"`
	Build       yaml.Node         `yaml:"build"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	StopGrace   string            `yaml:"stop_grace_period"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test    []string `yaml:"test"`
		Disable bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
}

// builtHere reports whether the service's image is built from this
// repository's Dockerfile.
func (s composeService) builtHere() bool {
	switch s.Build.Kind {
	case yaml.ScalarNode:
		return s.Build.Value == "."
	case yaml.MappingNode:
		var b struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		}
		return s.Build.Decode(&b) == nil && b.Context == "." && (b.Dockerfile == "" || b.Dockerfile == "Dockerfile")
	}
	return false
}

var composeRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}`)

// composeValue interpolates a compose value as compose would with none of
// its variables set in the shell: a default is used, a required variable
// (${VAR:?message}) gets a stand-in value.
func composeValue(v string) string {
	return composeRef.ReplaceAllStringFunc(v, func(ref string) string {
		m := composeRef.FindStringSubmatch(ref)
		switch {
		case strings.HasSuffix(m[2], "-"):
			return m[3]
		case strings.HasSuffix(m[2], "?"):
			return "compose-" + strings.ToLower(strings.ReplaceAll(m[1], "_", "-"))
		}
		return ""
	})
}

func TestComposeRunsCommandsParleyAccepts(t *testing.T) {
	t.Parallel()
	d := parseDockerfile(t)
	var compose struct {
		Services map[string]composeService `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readRepoFile(t, "compose.yaml")), &compose))

	type parleyService struct {
		name   string
		args   *configArg
		file   string
		env    map[string]string
		health *configArg
	}
	var migrate *parleyService
	var replicas []*parleyService
	for name, s := range compose.Services {
		if !s.builtHere() {
			continue
		}
		entrypoint, command := d.entrypoint, d.cmd
		if s.Entrypoint != nil {
			entrypoint = s.Entrypoint
		}
		if s.Command != nil {
			command = s.Command
		}
		require.True(t, isParley(entrypoint[0]), "services.%s runs parley: %q", name, entrypoint)
		where := "compose.yaml services." + name
		ps := &parleyService{name: name, args: requireAccepted(t, where, append(append([]string(nil), entrypoint[1:]...), command...))}
		// The image's HEALTHCHECK, unless the service has its own.
		health := d.health
		if s.Healthcheck != nil {
			require.False(t, s.Healthcheck.Disable, "%s: keep the health check", where)
			if len(s.Healthcheck.Test) > 0 {
				require.Equal(t, "CMD", s.Healthcheck.Test[0], "%s: the health check runs parley without a shell", where)
				health = s.Healthcheck.Test[1:]
			}
		}
		require.True(t, isParley(health[0]), "%s: the health check runs parley: %q", where, health)
		ps.health = requireAccepted(t, where+" health check", health[1:])
		require.Equal(t, ps.args.path(), ps.health.path(), "%s: the health check reads the config the service runs with", where)

		// The config the service names is a file of the repository,
		// mounted where the command looks.
		for _, v := range s.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) >= 2 && parts[1] == ps.args.path() {
				ps.file = strings.TrimPrefix(parts[0], "./")
			}
		}
		require.NotEmpty(t, ps.file, "%s mounts the config %s", where, ps.args.path())
		ps.env = map[string]string{}
		for k, v := range s.Environment {
			ps.env[k] = composeValue(v)
		}
		requireEnvProvided(t, ps.file, documented(s.Environment))
		cfg := loadDeployConfig(t, ps.file, ps.env)

		// One database for all: the PostgreSQL service of this file.
		require.Equal(t, "postgres", cfg.Store.Driver, where)
		u, err := url.Parse(cfg.Store.DSN.Reveal())
		require.NoError(t, err)
		db, ok := compose.Services[u.Hostname()]
		require.True(t, ok, "%s: the DSN's host %q is a service of compose.yaml", where, u.Hostname())
		require.True(t, strings.HasPrefix(db.Image, "postgres:"), "%s: %s is PostgreSQL", where, u.Hostname())
		require.Equal(t, db.Environment["POSTGRES_USER"], u.User.Username(), where)
		pw, _ := u.User.Password()
		require.Equal(t, composeValue(db.Environment["POSTGRES_PASSWORD"]), pw, where)
		require.Equal(t, "/"+db.Environment["POSTGRES_DB"], u.Path, where)
		require.Equal(t, "service_healthy", s.DependsOn[u.Hostname()].Condition, "%s waits for PostgreSQL", where)

		switch ps.args.args[0] {
		case "migrate":
			require.Nil(t, migrate, "one migrate service")
			migrate = ps
		case "run":
			replicas = append(replicas, ps)
			for _, p := range s.Ports {
				parts := strings.Split(p, ":")
				requireListenPort(t, cfg, parts[len(parts)-1])
			}
			grace, err := time.ParseDuration(s.StopGrace)
			require.NoError(t, err, "%s: stop_grace_period", where)
			require.Greater(t, grace, drainSeconds*time.Second, "%s: docker stop waits for the drain", where)
		default:
			t.Fatalf("%s runs %q: neither migrate nor run", where, ps.args.args)
		}
	}
	require.NotNil(t, migrate, "compose.yaml has a migrate service")
	require.Len(t, replicas, 2, "compose.yaml runs two replicas")
	for _, r := range replicas {
		require.Equal(t, "service_completed_successfully", compose.Services[r.name].DependsOn[migrate.name].Condition,
			"services.%s starts after the migration", r.name)
	}

	// On PostgreSQL: the migration, then both replicas on one schema, each
	// healthy, Telegram's API and the model faked.
	t.Run("on PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := storetest.PostgresDSN(t)
		fake := telegramtest.NewServer(t)
		model := llmtest.NewServer(t)
		override := map[string]string{
			"PARLEY_DSN":         dsn,
			"TELEGRAM_BOT_TOKEN": fake.Token(),
			"TELEGRAM_API_URL":   fake.URL(),
			"OPENAI_BASE_URL":    model.URL(),
		}
		env := merged(migrate.env, override)
		code, out, errOut := runCommand(migrate.args.with(rewriteConfig(t, migrate.file, "127.0.0.1:0")), env)
		require.Equal(t, 0, code, "%s: %s%s", migrate.name, out, errOut)
		require.Contains(t, out, "(postgres)")
		var running []*running
		for _, rep := range replicas {
			env := merged(rep.env, override)
			r := startCommand(t, rep.args.with(rewriteConfig(t, rep.file, "127.0.0.1:0")), env)
			requireHealthy(t, rep.health, rep.file, r, env)
			running = append(running, r)
		}
		for _, r := range running {
			r.stop(t)
		}
	})
}

// --- deploy/parley.service ---

type unitFile struct {
	service map[string][]string // [Service] key -> values, in order
	// installs maps an installed path to the repository file the unit's
	// comments install there.
	installs map[string]string
}

func parseUnit(t *testing.T) unitFile {
	t.Helper()
	u := unitFile{service: map[string][]string{}, installs: map[string]string{}}
	install := regexp.MustCompile(`^#\s+install\s+(?:-\S+\s+\S+\s+)*(deploy/\S+)\s+(/\S+)`)
	section := ""
	for _, l := range strings.Split(readRepoFile(t, "deploy/parley.service"), "\n") {
		l = strings.TrimSpace(l)
		if m := install.FindStringSubmatch(l); m != nil {
			u.installs[m[2]] = m[1]
		}
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "["):
			section = l
		case section == "[Service]":
			k, v, ok := strings.Cut(l, "=")
			require.True(t, ok, "parley.service: %q", l)
			u.service[k] = append(u.service[k], v)
		}
	}
	return u
}

// last is the value a unit setting ends with.
func (u unitFile) last(key string) string {
	v := u.service[key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func TestSystemdUnitRunsCommandsParleyAccepts(t *testing.T) {
	t.Parallel()
	u := parseUnit(t)

	// The hardening the unit promises (deploy/README.md).
	for key, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"CapabilityBoundingSet": "", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
		"ProtectKernelTunables": "yes", "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes",
		"ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "DynamicUser": "yes",
		"KillSignal": "SIGTERM", "Restart": "on-failure", "RestartPreventExitStatus": "2",
	} {
		require.Contains(t, u.service, key, "parley.service sets %s", key)
		require.Equal(t, want, u.last(key), "parley.service: %s", key)
	}
	require.Equal(t, []string{"@system-service", "~@privileged"}, u.service["SystemCallFilter"])
	stop, err := time.ParseDuration(u.last("TimeoutStopSec"))
	require.NoError(t, err)
	require.Greater(t, stop, drainSeconds*time.Second, "systemctl stop waits for the drain")

	var pre, start *configArg
	for _, key := range []string{"ExecStartPre", "ExecStart"} {
		require.Len(t, u.service[key], 1, "parley.service: one %s", key)
		argv := strings.Fields(strings.TrimLeft(u.last(key), "-@:+!"))
		require.True(t, isParley(argv[0]), "%s runs parley: %q", key, argv)
		require.True(t, filepath.IsAbs(argv[0]), "%s names parley by its absolute path", key)
		c := requireAccepted(t, "parley.service "+key, argv[1:])
		if key == "ExecStartPre" {
			pre = c
		} else {
			start = c
		}
	}
	require.Equal(t, "migrate", pre.args[0])
	require.Equal(t, "run", start.args[0])
	require.Equal(t, pre.path(), start.path())

	file, ok := u.installs[start.path()]
	require.True(t, ok, "parley.service's comments install a config at %s", start.path())
	envFile := strings.TrimPrefix(u.last("EnvironmentFile"), "-")
	require.Equal(t, "deploy/parley.env.example", u.installs[envFile], "the comments install the EnvironmentFile")

	set, optional := deployEnv(t)
	requireEnvProvided(t, file, documented(set, optional))
	cfg := loadDeployConfig(t, file, set)
	loadDeployConfig(t, file, merged(set, optional))
	require.Equal(t, "sqlite", cfg.Store.Driver)
	state := "/var/lib/" + u.last("StateDirectory") + "/"
	require.True(t, strings.HasPrefix(cfg.Store.DSN.Reveal(), state),
		"the SQLite file %s is in the StateDirectory (ProtectSystem=strict: nothing else is writable)", cfg.Store.DSN.Reveal())

	// ExecStartPre, then ExecStart, with the state directory moved to a
	// temporary folder.
	dir := t.TempDir()
	model := llmtest.NewServer(t)
	env := merged(set, map[string]string{"OPENAI_BASE_URL": model.URL()})
	cfgPath := rewriteConfig(t, file, "127.0.0.1:0", state, dir+"/")
	code, out, errOut := runCommand(pre.with(cfgPath), env)
	require.Equal(t, 0, code, "ExecStartPre: %s%s", out, errOut)
	require.Contains(t, out, "(sqlite)")
	r := startCommand(t, start.with(cfgPath), env)
	require.NoError(t, checkHealth(context.Background(), "http://"+r.addr+"/healthz", waitFor, io.Discard))
	r.stop(t)
}

// deploy/build.sh is the go build line of the image and of CI: it builds
// ./cmd/parley, and the binary reports its commit from the build info
// when built from a git checkout, or what the Docker build passes it.
func TestBuildScriptBuildsParley(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	build := func(env ...string) string {
		t.Helper()
		bin := filepath.Join(dir, fmt.Sprintf("parley-%d", len(env)))
		cmd := exec.Command("sh", repoFile("deploy/build.sh"), bin)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "deploy/build.sh: %s", out)
		out, err = exec.Command(bin, "version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out))
	}

	line := build()
	require.Regexp(t, `^parley \S+ \(.*go1\.\d+\S* \w+/\w+\)$`, line)
	if head, err := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output(); err == nil {
		require.Contains(t, line, "commit "+strings.TrimSpace(string(head))[:12], "built from a git checkout")
	} else {
		t.Logf("not a git checkout (%v): no commit to check", err)
	}

	require.Equal(t, "parley v9.9.9-test (commit 0123456789ab, built 2026-01-02T03:04:05Z, "+goPlatform(t, line)+")",
		build("PARLEY_VERSION=v9.9.9-test", "PARLEY_COMMIT=0123456789abcdef0123456789abcdef01234567", "PARLEY_DATE=2026-01-02T03:04:05Z"))
}

// goPlatform is the "go1.x os/arch" end of a version line.
func goPlatform(t *testing.T, line string) string {
	t.Helper()
	m := regexp.MustCompile(`(go1\.\S+ \w+/\w+)\)$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	return m[1]
}

// The image starts goroutines with small stacks: with Go sizing them by
// the average, the turns' deep stacks made every HTTP connection's two
// goroutines start big, 26-37 MB more at the peak of 2,000 users at once
// (BENCHMARKS.md, issue 39). The systemd unit does the same.
func TestDeployStartsGoroutinesSmall(t *testing.T) {
	t.Parallel()
	require.Equal(t, "adaptivestackstart=0", parseDockerfile(t).env["GODEBUG"])
	require.Contains(t, readRepoFile(t, "deploy/parley.service"), "\nEnvironment=GODEBUG=adaptivestackstart=0\n")
}
