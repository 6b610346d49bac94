package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/parleybot/parley/app/modelside"
	"github.com/parleybot/parley/app/modules"

	"github.com/parleybot/parley/app/probes"

	"github.com/spf13/cobra"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/mcp"
	"github.com/parleybot/parley/store"
)

// Bounds of the doctor's probes. The model's is llm.timeout longer, which
// a local server loading the model on the first request may need.
const (
	probeTimeout    = 15 * time.Second
	mcpProbeTimeout = mcp.DefaultInitTimeout
)

func newDoctorCmd(e *cliEnv) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the config, then probe the model, each enabled platform, the store and each MCP server",
		Long: `doctor reads the config as parley run does (a bad one exits 2, naming
file, line and key), then probes each part the bot would use, at once, and
prints one line each, in a fixed order: the part (llm, each enabled
adapter, store, mcp:NAME), ok or FAIL, and what it found or the key to
fix. It changes nothing: no message is sent, no webhook set, no schema
migrated. Exit status 0 when every check passes, 1 when one fails.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := e.loadConfig(c)
			if err != nil {
				return err
			}
			checks, done, err := doctorChecks(c.Context(), cfg, e.logger)
			if err != nil {
				return err
			}
			defer done()
			if failed := runChecks(c.Context(), checks, e.io.Out, secretsIn(cfg, checks)); failed > 0 {
				return fmt.Errorf("doctor: %d of %d checks failed", failed, len(checks))
			}
			return nil
		},
	}
}

// check is one line of the doctor's report.
type check struct {
	// name begins the line: llm, an adapter's name, store, mcp:NAME.
	name    string
	timeout time.Duration
	probe   func(ctx context.Context) (detail string, err error)
	// owner is what the probe belongs to (an adapter), searched for
	// secrets to keep out of the report.
	owner any
}

// doctorChecks validates the config as buildApp does, with the same exit
// status 2 for what is wrong in it, and returns the checks to run and a
// function releasing what was built. Nothing is opened or started. With
// several bots each has its block (its lines named BOT/llm, BOT/telegram,
// BOT/mcp:NAME), the store's line last.
func doctorChecks(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ []check, _ func(), err error) {
	bots := cfg.BotConfigs()
	var checks []check
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	storeCheck := check{name: "store", timeout: probeTimeout,
		probe: func(ctx context.Context) (string, error) { return probes.Store(ctx, cfg, log) }}
	for _, bc := range bots {
		prefix := ""
		if len(bots) > 1 {
			prefix = bc.BotID + "/"
		}
		own, more, mcps, err := botChecks(ctx, bc, log, prefix)
		if more != nil {
			releases = append(releases, more)
		}
		if err != nil {
			return nil, nil, err
		}
		checks = append(checks, own...)
		if len(bots) == 1 {
			// One bot keeps the order it always had: the store before MCP.
			checks = append(checks, storeCheck)
		}
		checks = append(checks, mcps...)
	}
	if len(bots) > 1 {
		checks = append(checks, storeCheck)
	}
	return checks, release, nil
}

// botChecks are one bot's checks, their names after prefix: its model and
// adapters, then its MCP servers; and a function releasing its adapters.
func botChecks(ctx context.Context, cfg *config.Config, log *slog.Logger, prefix string) (own []check, release func(), mcps []check, err error) {
	model, err := llm.New(llm.Config{
		BaseURL: cfg.LLM.BaseURL,
		APIKey:  cfg.LLM.APIKey.Reveal(),
		Model:   cfg.LLM.Model,
		Timeout: cfg.LLM.Timeout,
		// One answer is what the doctor reports, not a retried one.
		MaxRetries: llm.NoRetries,
		Logger:     log.With("component", "llm"),
	})
	if err != nil {
		return nil, nil, nil, usageError{Err: fmt.Errorf("llm: %w", err)}
	}
	if _, err := modelside.NewTranscriber(cfg, model, log); err != nil {
		return nil, nil, nil, usageError{Err: err}
	}
	plugins, err := modules.DecodePlugins(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	env := core.Env{BotID: cfg.BotID, Logger: log, Clock: core.SystemClock{}, Location: cfg.Location(), BotName: "Parley"}
	for _, p := range plugins {
		if n, ok := p.(interface{ BotName() string }); ok {
			env.BotName = n.BotName()
		}
	}
	adapters, err := modules.BuildAdapters(ctx, cfg, env, func(_ string, enabled bool) bool { return enabled })
	if err != nil {
		return nil, nil, nil, err
	}
	release = func() { modules.CleanupAll(adapters) }
	if len(adapters) == 0 {
		return nil, release, nil, usageError{Err: errors.New("no adapter is enabled: enable one under adapters: in the config")}
	}
	if err := checkPlugins(ctx, cfg, env, model, plugins); err != nil {
		return nil, release, nil, err
	}
	mgr, err := newMCP(cfg, log, nil) // the doctor counts nothing
	if err != nil {
		return nil, release, nil, usageError{Err: fmt.Errorf("mcp: %w", err)}
	}
	own = []check{{name: prefix + "llm", timeout: probeTimeout + cfg.LLM.Timeout,
		probe: func(ctx context.Context) (string, error) { return probes.Model(ctx, cfg, model) }}}
	for _, ad := range adapters {
		c := check{name: prefix + ad.Name(), timeout: probeTimeout, owner: ad,
			probe: func(context.Context) (string, error) { return "nothing to probe", nil }}
		if p, ok := ad.(core.Prober); ok {
			c.probe = p.Probe
		}
		c.probe = withStreamingMode(c.probe, cfg.Bot.Streaming, ad)
		own = append(own, c)
	}
	if mgr != nil {
		for _, n := range mgr.Names() {
			mcps = append(mcps, check{name: prefix + "mcp:" + n, timeout: mcpProbeTimeout,
				probe: func(ctx context.Context) (string, error) { return probes.MCP(ctx, cfg, mgr, n) }})
		}
	}
	return own, release, mcps, nil
}

// withStreamingMode adds to an adapter's line how its replies will grow
// while the model writes them (bot.streaming, adapters.NAME.streaming).
func withStreamingMode(probe func(context.Context) (string, error), st config.Streaming, ad core.Adapter) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		detail, err := probe(ctx)
		if err != nil {
			return detail, err
		}
		return detail + "; " + streamingMode(st, ad), nil
	}
}

// streamingMode says how ad streams replies under st.
func streamingMode(st config.Streaming, ad core.Adapter) string {
	if !st.Enabled {
		return "streaming: off (bot.streaming.enabled is false)"
	}
	if _, ok := ad.(core.Streamer); !ok {
		return "streaming: none (this adapter sends replies whole)"
	}
	caps := core.StreamCapabilities{Mode: "stream"}
	if m, ok := ad.(core.StreamModer); ok {
		caps = m.StreamCapabilities()
	}
	if caps.Mode == "" {
		return fmt.Sprintf("streaming: off (adapters.%s.streaming)", ad.Name())
	}
	return fmt.Sprintf("streaming: %s, an update at most every %s", caps.Mode, max(st.Interval, caps.MinInterval))
}

// checkPlugins provisions and validates the enabled plugins as parley run
// does, so that their settings are checked (exit 2), and releases them.
// They get an empty in-memory database rather than the configured one:
// the config is judged apart from whether the store is reachable, which
// the store's own line reports.
func checkPlugins(ctx context.Context, cfg *config.Config, env core.Env, model *llm.Client, plugins []core.Plugin) error {
	mem, err := store.Open(ctx, store.Options{Driver: store.DriverSQLite, DSN: ":memory:"})
	if err != nil {
		return fmt.Errorf("opening a scratch database to check the plugins: %w", err)
	}
	defer mem.Close()
	if err := mem.Migrate(ctx, pluginMigrators()...); err != nil {
		return fmt.Errorf("preparing a scratch database to check the plugins: %w", err)
	}
	env.Store, env.Database, env.LLM, env.LightModel = mem, mem.Database(), core.WithoutReasoning(model), cfg.LightModel()
	env.MaxPendingPerConversation = cfg.Scheduler.MaxPendingPerConversation
	provisioned, err := modules.ProvisionPlugins(ctx, cfg, plugins, env)
	if err != nil {
		return err
	}
	modules.CleanupAll(provisioned)
	return nil
}

// result is a finished check.
type result struct {
	detail string
	err    error
}

// runChecks runs every check at once, each bounded by its timeout, and
// writes one line per check to w in the checks' order, each as soon as it
// and those before it are done. It returns how many failed. No secret
// reaches w.
func runChecks(ctx context.Context, checks []check, w io.Writer, secrets []string) (failed int) {
	width := 0
	for _, c := range checks {
		width = max(width, len(c.name))
	}
	results := make([]result, len(checks))
	done := make([]chan struct{}, len(checks))
	for i, c := range checks {
		done[i] = make(chan struct{})
		go func() {
			defer close(done[i])
			results[i] = runCheck(ctx, c)
		}()
	}
	for i, c := range checks {
		<-done[i]
		r := results[i]
		status, detail := "ok", r.detail
		if r.err != nil {
			status, detail = "FAIL", r.err.Error()
			failed++
		}
		line := fmt.Sprintf("%-*s  %-4s  %s", width, c.name, status, oneLine(detail))
		fmt.Fprintln(w, redactAll(strings.TrimRight(line, " "), secrets))
	}
	return failed
}

// runCheck runs one probe under its deadline; a probe that panics fails.
func runCheck(ctx context.Context, c check) (r result) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r = result{err: fmt.Errorf("the probe panicked: %v", p)}
		}
	}()
	detail, err := c.probe(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (the check gave up after %s)", err, c.timeout)
	}
	return result{detail: detail, err: err}
}

// oneLine joins a multi-line text into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// redactAll replaces every secret in s.
func redactAll(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

// secretsIn lists the secrets the report must never show: the config's
// (model keys, API token, MCP env and headers) and those of every module
// probed (its config.Secret fields). The store's DSN is left out: it is
// mostly a path, and only store.Describe's form of it is ever printed.
func secretsIn(cfg *config.Config, checks []check) []string {
	var out []string
	add := func(s config.Secret) {
		// A few characters would match innocent text.
		if v := s.Reveal(); len(v) >= 6 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	add(cfg.HTTP.APIToken)
	for _, bc := range cfg.BotConfigs() {
		add(bc.LLM.APIKey)
		add(bc.LLM.Transcription.APIKey)
		add(bc.Voice.APIKey)
		for _, s := range bc.MCP.Servers {
			for _, v := range s.Env {
				add(v)
			}
			for _, v := range s.Headers {
				add(v)
			}
		}
	}
	for _, c := range checks {
		if c.owner != nil {
			walkSecrets(reflect.ValueOf(c.owner), add, 0)
		}
	}
	return out
}

var secretType = reflect.TypeFor[config.Secret]()

// walkSecrets calls add with every exported config.Secret in v.
func walkSecrets(v reflect.Value, add func(config.Secret), depth int) {
	if depth > 8 || !v.IsValid() {
		return
	}
	if v.Type() == secretType {
		add(config.Secret(v.String()))
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkSecrets(v.Elem(), add, depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				walkSecrets(v.Field(i), add, depth+1)
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			walkSecrets(it.Value(), add, depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkSecrets(v.Index(i), add, depth+1)
		}
	}
}
