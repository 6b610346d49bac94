package app

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
)

// decodeSection decodes a module's section into v. A missing section keeps
// v's defaults and enabled is the module's default.
func decodeSection(secs map[string]config.Section, name string, v any, enabledByDefault bool) (bool, error) {
	sec, ok := secs[name]
	if !ok {
		return enabledByDefault, nil
	}
	if err := sec.Decode(v); err != nil {
		return false, err
	}
	return sec.Enabled, nil
}

// renamedAdapters maps an adapter's former name to its name now, with a
// note on what it is: a config still using the former section is told
// what to write instead, not just "unknown adapter". A name a registered
// adapter has is never refused.
var renamedAdapters = map[string]renamed{
	"console": {to: terminal.Name, note: "it is the terminal chat of `parley chat`; " +
		"the web console's settings stay under the top-level console:"},
}

// renamed is a module's name now, for a section under its former name.
type renamed struct{ to, note string }

// unknownSections rejects sections that name no registered module; one
// under a name in renames (may be nil) is told the module's name now.
func unknownSections(cfg *config.Config, kind string, secs map[string]config.Section, known []string, renames map[string]renamed) error {
	names := make([]string, 0, len(secs))
	for n := range secs {
		names = append(names, n)
	}
	sort.Strings(names)
	isKnown := map[string]bool{}
	for _, k := range known {
		isKnown[k] = true
	}
	for _, n := range names {
		if isKnown[n] {
			continue
		}
		sec := secs[n]
		if r, ok := renames[n]; ok {
			to := strings.TrimSuffix(sec.Path, n) + r.to
			return &config.Error{File: cfg.File, Line: sec.Line, Key: sec.Path,
				Msg: fmt.Sprintf("was renamed to %s: rename the section (%s)", to, r.note)}
		}
		return &config.Error{File: cfg.File, Line: sec.Line, Key: sec.Path, Msg: fmt.Sprintf("unknown %s (known: %v)", kind, known)}
	}
	return nil
}

// provision runs the module lifecycle after decoding: Provision, Validate.
func provision(ctx context.Context, kind, name string, m any, env core.Env) error {
	if p, ok := m.(core.Provisioner); ok {
		if err := p.Provision(ctx, env); err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, err)
		}
	}
	if v, ok := m.(core.Validator); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("%s %s: %w", kind, name, err)
		}
	}
	return nil
}

// cleanup releases what Provision acquired; safe after a partial Provision.
func cleanup(m any) {
	if c, ok := m.(core.Cleaner); ok {
		_ = c.Cleanup()
	}
}

// decodePlugins decodes every registered plugin's section (so a disabled
// plugin's typos are still reported) and returns the enabled ones, in name
// order, not yet provisioned. Every plugin is enabled unless its section
// says otherwise, or it is off by default and has none.
func decodePlugins(cfg *config.Config) ([]core.Plugin, error) {
	reg := core.Plugins()
	if err := unknownSections(cfg, "plugin", cfg.Plugins, reg.Names(), nil); err != nil {
		return nil, usageError{Err: err}
	}
	var out []core.Plugin
	for _, name := range reg.Names() {
		info, _ := reg.Lookup(name)
		p := info.New()
		enabled, err := decodeSection(cfg.Plugins, name, p, !info.OffByDefault)
		if err != nil {
			return nil, usageError{Err: err}
		}
		if enabled {
			out = append(out, p)
		}
	}
	return out, nil
}

// provisionPlugins provisions and validates decoded plugins; on a failure
// it cleans up the ones done so far.
func provisionPlugins(ctx context.Context, ps []core.Plugin, env core.Env) ([]core.Plugin, error) {
	for i, p := range ps {
		if err := provision(ctx, "plugin", p.Name(), p, env); err != nil {
			cleanupAll(ps[:i])
			cleanup(p)
			return nil, usageError{Err: err}
		}
	}
	return ps, nil
}

// buildAdapters decodes and provisions the adapters, as decodePlugins and
// provisionPlugins do for plugins; want, when non-nil, limits
// which enabled adapters are built (parley chat wants only the terminal).
func buildAdapters(ctx context.Context, cfg *config.Config, env core.Env, want func(name string, enabled bool) bool) ([]core.Adapter, error) {
	reg := core.Adapters()
	if err := unknownSections(cfg, "adapter", cfg.Adapters, reg.Names(), renamedAdapters); err != nil {
		return nil, usageError{Err: err}
	}
	var out []core.Adapter
	for _, name := range reg.Names() {
		info, _ := reg.Lookup(name)
		a := info.New()
		enabled, err := decodeSection(cfg.Adapters, name, a, info.EnabledByDefault)
		if err != nil {
			return nil, usageError{Err: err}
		}
		if !want(name, enabled) {
			continue
		}
		if err := provision(ctx, "adapter", name, a, env); err != nil {
			cleanupAll(out)
			cleanup(a)
			return nil, usageError{Err: err}
		}
		out = append(out, a)
	}
	return out, nil
}

func cleanupAll[T any](ms []T) {
	for _, m := range ms {
		cleanup(m)
	}
}
