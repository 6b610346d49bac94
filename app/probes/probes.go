// Package probes are the doctor's probes of the model server, the store
// and an MCP server: each says in one line what it found, or what to fix
// in the config.
package probes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/mcp"
	"github.com/parleybot/parley/store"
)

// RedactedURL is base without a password (a proxy URL may hold one).
func RedactedURL(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// pingPrompt is what the doctor asks the model, for one token.
var pingPrompt = []llm.Message{{Role: llm.RoleUser, Content: "Say OK."}}

// Model lists the server's models (GET /models) and asks llm.model,
// and llm.light_model when it differs, for a one-token answer. A server
// without a model list is only asked.
func Model(ctx context.Context, cfg *config.Config, c *llm.Client) (string, error) {
	base := RedactedURL(cfg.LLM.BaseURL)
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
	base := RedactedURL(cfg.LLM.BaseURL)
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

// Store opens the configured store, checks that it answers and
// whether its schema is current, without creating or migrating anything.
// A database that does not exist yet, or has no schema, is what a first
// start creates: that passes. One behind this build (migrations pending)
// or ahead of it fails.
func Store(ctx context.Context, cfg *config.Config, log *slog.Logger) (string, error) {
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
	return fmt.Sprintf("%s, schema version %d (current)%s", where, v, pgvectorNote(ctx, driver, st)), nil
}

// pgvectorNote says whether PostgreSQL has pgvector, which memory by
// meaning searches with (plugins.memory.embeddings).
func pgvectorNote(ctx context.Context, driver string, st *store.Store) string {
	if driver != store.DriverPostgres {
		return ""
	}
	var installed, available []string
	db := st.DB().WithContext(ctx)
	if db.Raw(`SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&installed).Error != nil ||
		db.Raw(`SELECT default_version FROM pg_available_extensions WHERE name = 'vector'`).Scan(&available).Error != nil {
		return ""
	}
	switch {
	case len(installed) > 0:
		return "; pgvector " + installed[0] + " (memory by meaning searches with it)"
	case len(available) > 0:
		return "; pgvector " + available[0] + " is on the server, not in this database (parley run creates it if its role may; else CREATE EXTENSION vector)"
	}
	return "; no pgvector (memory by meaning searches in Parley)"
}

// storeReason is a store error without the "opening ... store: " prefix.
func storeReason(driver string, err error) string {
	msg := err.Error()
	for _, p := range []string{"opening " + driver + " store: ", "pinging " + driver + " store: ", "reading schema version: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// MCP connects to one MCP server afresh (initialize, tools/list) and
// closes it.
func MCP(ctx context.Context, cfg *config.Config, mgr *mcp.Manager, name string) (string, error) {
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
