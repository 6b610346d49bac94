package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

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
// function releasing what was built. Nothing is opened or started.
func doctorChecks(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ []check, _ func(), err error) {
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
		return nil, nil, usageError{fmt.Errorf("llm: %w", err)}
	}
	if _, err := newTranscriber(cfg, model, log); err != nil {
		return nil, nil, usageError{err}
	}
	plugins, err := decodePlugins(cfg)
	if err != nil {
		return nil, nil, err
	}
	env := core.Env{Logger: log, Clock: core.SystemClock{}, Location: cfg.Location(), BotName: "Parley"}
	for _, p := range plugins {
		if n, ok := p.(interface{ BotName() string }); ok {
			env.BotName = n.BotName()
		}
	}
	adapters, err := buildAdapters(ctx, cfg, env, func(_ string, enabled bool) bool { return enabled })
	if err != nil {
		return nil, nil, err
	}
	release := func() { cleanupAll(adapters) }
	defer func() {
		if err != nil {
			release()
		}
	}()
	if len(adapters) == 0 {
		return nil, nil, usageError{errors.New("no adapter is enabled: enable one under adapters: in the config")}
	}
	if err := checkPlugins(ctx, cfg, env, model, plugins); err != nil {
		return nil, nil, err
	}
	mgr, err := newMCP(cfg, log, nil) // the doctor counts nothing
	if err != nil {
		return nil, nil, usageError{fmt.Errorf("mcp: %w", err)}
	}

	checks := []check{{name: "llm", timeout: probeTimeout + cfg.LLM.Timeout,
		probe: func(ctx context.Context) (string, error) { return probeModel(ctx, cfg, model) }}}
	for _, ad := range adapters {
		c := check{name: ad.Name(), timeout: probeTimeout, owner: ad,
			probe: func(context.Context) (string, error) { return "nothing to probe", nil }}
		if p, ok := ad.(core.Prober); ok {
			c.probe = p.Probe
		}
		c.probe = withStreamingMode(c.probe, cfg.Bot.Streaming, ad)
		checks = append(checks, c)
	}
	checks = append(checks, check{name: "store", timeout: probeTimeout,
		probe: func(ctx context.Context) (string, error) { return probeStore(ctx, cfg, log) }})
	if mgr != nil {
		for _, n := range mgr.Names() {
			checks = append(checks, check{name: "mcp:" + n, timeout: mcpProbeTimeout,
				probe: func(ctx context.Context) (string, error) { return probeMCP(ctx, cfg, mgr, n) }})
		}
	}
	return checks, release, nil
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
	provisioned, err := provisionPlugins(ctx, plugins, env)
	if err != nil {
		return err
	}
	cleanupAll(provisioned)
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
	add(cfg.LLM.APIKey)
	add(cfg.LLM.Transcription.APIKey)
	add(cfg.HTTP.APIToken)
	for _, s := range cfg.MCP.Servers {
		for _, v := range s.Env {
			add(v)
		}
		for _, v := range s.Headers {
			add(v)
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

// pingPrompt is what the doctor asks the model, for one token.
var pingPrompt = []llm.Message{{Role: llm.RoleUser, Content: "Say OK."}}

// probeModel lists the server's models (GET /models) and asks llm.model,
// and llm.light_model when it differs, for a one-token answer. A server
// without a model list is only asked.
func probeModel(ctx context.Context, cfg *config.Config, c *llm.Client) (string, error) {
	base := redactedURL(cfg.LLM.BaseURL)
	listed, err := c.Models(ctx)
	switch {
	case err == nil, llm.NoModelList(err):
	case isRefusedKey(err):
		return "", refusedKey(cfg, err)
	case unanswered(err):
		return "", modelUnreachable(cfg, err)
	default:
		// A 5xx or a body that is not a list: the answer says more.
		listed = nil
	}
	type want struct{ key, name string }
	models := []want{{"llm.model", cfg.LLM.Model}}
	if light := cfg.LLM.LightModel; light != "" && light != cfg.LLM.Model {
		models = append(models, want{"llm.light_model", light})
	}
	var names, notes []string
	for _, m := range models {
		known := len(listed) == 0 || isListed(listed, m.name)
		_, err := c.Complete(ctx, llm.Request{Model: m.name, Messages: pingPrompt, MaxTokens: 1})
		switch {
		case err == nil || cutShort(err):
		case isRefusedKey(err):
			return "", refusedKey(cfg, err)
		case unanswered(err):
			return "", modelUnreachable(cfg, err)
		case !known:
			return "", fmt.Errorf("model %q is not among the %d models %s lists%s: fix %s", m.name, len(listed), base, closeNames(m.name, listed), m.key)
		case statusOf(err) == http.StatusNotFound:
			return "", fmt.Errorf("model %q does not exist on %s (%s): fix %s", m.name, base, llmReason(err), m.key)
		case statusOf(err) == http.StatusTooManyRequests:
			return "", fmt.Errorf("%s refuses requests for now (%s): wait, or check the account's quota and rate limits", base, llmReason(err))
		default:
			return "", fmt.Errorf("model %q did not answer (%s): check %s and llm.base_url", m.name, llmReason(err), m.key)
		}
		names = append(names, m.name)
		if !known {
			notes = append(notes, m.name+" answers although GET /models does not list it")
		}
	}
	detail := names[0] + " answers at " + base
	if len(names) == 2 {
		detail = names[0] + " and " + names[1] + " answer at " + base
	}
	if tc := cfg.LLM.Transcription; tc.Model != "" && (tc.BaseURL == "" || tc.BaseURL == cfg.LLM.BaseURL) &&
		len(listed) > 0 && !isListed(listed, tc.Model) {
		notes = append(notes, fmt.Sprintf("llm.transcription.model %s is not listed, so voice notes may not be transcribed (model: \"\" turns them off)", tc.Model))
	}
	if len(notes) > 0 {
		detail += "; " + strings.Join(notes, "; ")
	}
	return detail, nil
}

// statusOf is the HTTP status of a model error (0: none).
func statusOf(err error) int {
	var e *llm.Error
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

func isRefusedKey(err error) bool {
	s := statusOf(err)
	return s == http.StatusUnauthorized || s == http.StatusForbidden
}

// unanswered reports a model request that got no answer at all.
func unanswered(err error) bool {
	var e *llm.Error
	return errors.As(err, &e) && e.StatusCode == 0 && !errors.Is(err, context.Canceled)
}

// cutShort reports the refusal of a model that exists and would answer,
// but not in one token: some servers refuse so small a max_tokens
// ("Could not finish the message because max_tokens or model output limit
// was reached").
func cutShort(err error) bool {
	if statusOf(err) != http.StatusBadRequest {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "max_tokens") || strings.Contains(msg, "max_completion_tokens") || strings.Contains(msg, "output limit")
}

// llmReason is a model error as a short reason: status and the server's
// message, without the "llm: " prefix.
func llmReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), "llm: ")
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// refusedKey says which key to fix after a 401 or 403.
func refusedKey(cfg *config.Config, err error) error {
	code := statusOf(err)
	status := fmt.Sprintf("%d %s", code, http.StatusText(code))
	if code == http.StatusForbidden {
		// A 403 says why (no access to the model, the region): keep it.
		status = llmReason(err)
	}
	env := ""
	if llm.IsOpenAI(cfg.LLM.BaseURL) {
		env = " (" + config.EnvOpenAIAPIKey + ")"
	}
	if cfg.LLM.APIKey == "" {
		return fmt.Errorf("the server wants an API key and llm.api_key is empty (%s): set llm.api_key%s", status, env)
	}
	return fmt.Errorf("the API key was refused (%s): fix llm.api_key%s", status, env)
}

// modelUnreachable says that llm.base_url gave no answer, and why.
func modelUnreachable(cfg *config.Config, err error) error {
	base := redactedURL(cfg.LLM.BaseURL)
	var e *llm.Error
	if (errors.As(err, &e) && e.Timeout) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer from %s in time (llm.timeout is %s): is the server up? fix llm.base_url (or raise llm.timeout)", base, cfg.LLM.Timeout)
	}
	reason := llmReason(err)
	var ue *url.Error
	if errors.As(err, &ue) {
		reason = ue.Err.Error() // without the URL, said already
	}
	return fmt.Errorf("cannot reach %s (%s): fix llm.base_url", base, reason)
}

// isListed reports whether the model list has name; Ollama lists
// "llama3.1:latest" for the "llama3.1" it answers to.
func isListed(listed []string, name string) bool {
	return slices.Contains(listed, name) || (!strings.Contains(name, ":") && slices.Contains(listed, name+":latest"))
}

// closeNames is " (close: a, b, c)" for the listed names nearest name, or
// the whole short list when none is near.
func closeNames(name string, listed []string) string {
	type scored struct {
		name string
		d    int
	}
	var near []scored
	lower := strings.ToLower(name)
	for _, l := range listed {
		ll := strings.ToLower(l)
		// Ollama's names carry a tag ("llama3.1:latest") that a name
		// asked for often leaves out.
		base, _, _ := strings.Cut(ll, ":")
		d := min(editDistance(lower, ll), editDistance(lower, base))
		if d <= max(2, len(name)/3) || strings.Contains(ll, lower) || strings.Contains(lower, base) {
			near = append(near, scored{l, d})
		}
	}
	slices.SortStableFunc(near, func(a, b scored) int { return a.d - b.d })
	var names []string
	for _, s := range near[:min(3, len(near))] {
		names = append(names, s.name)
	}
	switch {
	case len(names) > 0:
		return " (close: " + strings.Join(names, ", ") + ")"
	case len(listed) > 0 && len(listed) <= 5:
		return " (it lists " + strings.Join(listed, ", ") + ")"
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// probeStore opens the configured store, checks that it answers and
// whether its schema is current, without creating or migrating anything.
// A database that does not exist yet, or has no schema, is what a first
// start creates: that passes. One behind this build (migrations pending)
// or ahead of it fails.
func probeStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (string, error) {
	driver, dsn := cfg.Store.Driver, cfg.Store.DSN.Reveal()
	if driver == "" {
		driver = store.DriverSQLite
	}
	where := driver + " " + store.Describe(driver, dsn)
	if driver == store.DriverSQLite {
		if file := store.SQLiteFile(dsn); file != "" {
			if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
				dir := filepath.Dir(file)
				if st, err := os.Stat(dir); err != nil || !st.IsDir() {
					return "", fmt.Errorf("%s: the directory %s does not exist: fix store.dsn (or create the directory)", where, dir)
				}
				return fmt.Sprintf("%s does not exist yet: parley run creates it (schema version %d)", where, store.LatestSchemaVersion()), nil
			}
		}
	}
	st, err := store.Open(ctx, store.Options{Driver: driver, DSN: dsn, Logger: log.With("component", "store")})
	if err != nil {
		return "", fmt.Errorf("%s: cannot open it (%s): fix store.dsn", where, storeReason(driver, err))
	}
	defer st.Close()
	if err := st.Ping(ctx); err != nil {
		return "", fmt.Errorf("%s does not answer (%s): fix store.dsn", where, storeReason(driver, err))
	}
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: cannot read its schema version (%s): is store.dsn a Parley database?", where, storeReason(driver, err))
	}
	latest := store.LatestSchemaVersion()
	if v > latest {
		return "", fmt.Errorf("%s is at schema version %d, newer than this build's %d: run the parley that migrated it, or a newer one", where, v, latest)
	}
	pending, err := st.PendingMigrations(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: cannot read its migrations (%s)", where, storeReason(driver, err))
	}
	switch {
	case v == 0:
		return fmt.Sprintf("%s answers and has no schema yet: parley run creates it (schema version %d)", where, latest), nil
	case len(pending) > 0:
		names := make([]string, 0, len(pending))
		for _, m := range pending {
			names = append(names, fmt.Sprintf("%d %s", m.Version, m.Name))
		}
		what := fmt.Sprintf("%d migrations are", len(pending))
		if len(pending) == 1 {
			what = "1 migration is"
		}
		return "", fmt.Errorf("%s is at schema version %d and %s pending (%s): run parley migrate", where, v, what, strings.Join(names, ", "))
	}
	return fmt.Sprintf("%s, schema version %d (current)", where, v), nil
}

// storeReason is a store error without the "opening ... store: " prefix.
func storeReason(driver string, err error) string {
	msg := err.Error()
	for _, p := range []string{"opening " + driver + " store: ", "pinging " + driver + " store: ", "reading schema version: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// probeMCP connects to one MCP server afresh (initialize, tools/list) and
// closes it.
func probeMCP(ctx context.Context, cfg *config.Config, mgr *mcp.Manager, name string) (string, error) {
	n, err := mgr.Probe(ctx, name)
	if err != nil {
		key := "mcp.servers." + name + ".command"
		if cfg.MCP.Servers[name].URL != "" {
			key = "mcp.servers." + name + ".url"
		}
		reason := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "mcp: "), name+": ")
		return "", fmt.Errorf("%s: fix %s", reason, key)
	}
	if n == 1 {
		return "1 tool", nil
	}
	return fmt.Sprintf("%d tools", n), nil
}
