// Package modules turns the config's adapters: and plugins: sections into
// the registered modules, decoded strictly and provisioned, reporting
// every mistake at once, each at its file, line and key.
package modules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/app/admin"
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

// unknownSections rejects sections that name no registered module, each
// of them; one under a name in renames (may be nil) is told the module's
// name now.
func unknownSections(cfg *config.Config, kind string, secs map[string]config.Section, known []string, renames map[string]renamed) []error {
	names := make([]string, 0, len(secs))
	for n := range secs {
		names = append(names, n)
	}
	sort.Strings(names)
	isKnown := map[string]bool{}
	for _, k := range known {
		isKnown[k] = true
	}
	var errs []error
	for _, n := range names {
		if isKnown[n] {
			continue
		}
		sec := secs[n]
		if r, ok := renames[n]; ok {
			to := strings.TrimSuffix(sec.Path, n) + r.to
			errs = append(errs, &config.Error{File: cfg.File, Line: sec.Line, Key: sec.Path,
				Msg: fmt.Sprintf("was renamed to %s: rename the section (%s)", to, r.note)})
			continue
		}
		errs = append(errs, &config.Error{File: cfg.File, Line: sec.Line, Key: sec.Path, Msg: fmt.Sprintf("unknown %s (known: %v)", kind, known)})
	}
	return errs
}

// sectionError places a module's provisioning error at its section (file,
// line, key), naming the unset environment variables under it; a module
// without a section (on by default) keeps the error as it is.
func sectionError(cfg *config.Config, secs map[string]config.Section, kind, name string, err error) error {
	sec, ok := secs[name]
	if !ok {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return &config.Error{File: cfg.File, Line: sec.Line, Key: sec.Path, Msg: err.Error() + cfg.UnsetUnder(sec.Path), Err: err}
}

// UsageErrors is errs as one usage error (exit status 2), nil for none,
// the config's in file order.
func UsageErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	var flat []error
	for _, e := range errs {
		flat = append(flat, flatten(e)...)
	}
	slices.SortStableFunc(flat, func(a, b error) int { return cmp.Compare(lineOf(a), lineOf(b)) })
	return admin.UsageError{Err: errors.Join(flat...)}
}

// flatten lists the errors err joins (through usage errors), or err.
func flatten(err error) []error {
	var u admin.UsageError
	if errors.As(err, &u) && u.Err != err {
		err = u.Err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// lineOf is the config line err is about, after every line when none.
func lineOf(err error) int {
	var ce *config.Error
	if errors.As(err, &ce) && ce.Line > 0 {
		return ce.Line
	}
	return int(^uint(0) >> 1)
}

// provision runs the module lifecycle after decoding: Provision, Validate.
func provision(ctx context.Context, m any, env core.Env) error {
	if p, ok := m.(core.Provisioner); ok {
		if err := p.Provision(ctx, env); err != nil {
			return err
		}
	}
	if v, ok := m.(core.Validator); ok {
		if err := v.Validate(); err != nil {
			return err
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

// DecodePlugins decodes every registered plugin's section (so a disabled
// plugin's typos are still reported) and returns the enabled ones, in name
// order, not yet provisioned. Every plugin is enabled unless its section
// says otherwise, or it is off by default and has none. Every error is
// reported, not the first.
func DecodePlugins(cfg *config.Config) ([]core.Plugin, error) {
	reg := core.Plugins()
	errs := unknownSections(cfg, "plugin", cfg.Plugins, reg.Names(), nil)
	var out []core.Plugin
	for _, name := range reg.Names() {
		info, _ := reg.Lookup(name)
		p := info.New()
		enabled, err := decodeSection(cfg.Plugins, name, p, !info.OffByDefault)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if enabled {
			out = append(out, p)
		}
	}
	if err := UsageErrors(errs); err != nil {
		return nil, err
	}
	return out, nil
}

// ProvisionPlugins provisions and validates decoded plugins, every one;
// on any failure it cleans them all up and reports each failure.
func ProvisionPlugins(ctx context.Context, cfg *config.Config, ps []core.Plugin, env core.Env) ([]core.Plugin, error) {
	var errs []error
	for _, p := range ps {
		if err := provision(ctx, p, env); err != nil {
			errs = append(errs, sectionError(cfg, cfg.Plugins, "plugin", p.Name(), err))
		}
	}
	if err := UsageErrors(errs); err != nil {
		CleanupAll(ps)
		return nil, err
	}
	return ps, nil
}

// BuildAdapters decodes and provisions the adapters, as DecodePlugins and
// ProvisionPlugins do for plugins; want, when non-nil, limits
// which enabled adapters are built (parley chat wants only the terminal).
func BuildAdapters(ctx context.Context, cfg *config.Config, env core.Env, want func(name string, enabled bool) bool) ([]core.Adapter, error) {
	reg := core.Adapters()
	errs := unknownSections(cfg, "adapter", cfg.Adapters, reg.Names(), renamedAdapters)
	var out []core.Adapter
	for _, name := range reg.Names() {
		info, _ := reg.Lookup(name)
		a := info.New()
		enabled, err := decodeSection(cfg.Adapters, name, a, info.EnabledByDefault)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !want(name, enabled) {
			continue
		}
		if err := provision(ctx, a, env); err != nil {
			cleanup(a)
			errs = append(errs, sectionError(cfg, cfg.Adapters, "adapter", name, err))
			continue
		}
		out = append(out, a)
	}
	if err := UsageErrors(errs); err != nil {
		CleanupAll(out)
		return nil, err
	}
	return out, nil
}

func CleanupAll[T any](ms []T) {
	for _, m := range ms {
		cleanup(m)
	}
}
