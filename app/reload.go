package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/core/config"
)

// A reload (SIGHUP, `parley reload`, POST /api/v1/reload) re-reads the
// config and applies its bots: a bot it adds is started, one it removes
// is stopped (its turns drained first), one whose sections changed is
// stopped and started again, and the others run on untouched. Sections
// every bot shares (store, http, log, console, runs, scheduler, the
// model's pacing) are not applied live: a new config changing them is
// refused, as is one that does not load or whose new bots cannot be
// built; the running config is then kept.

// reload applies next, the config read again, and says what changed.
func (a *app) reload(ctx context.Context, next *config.Config) (string, error) {
	a.reloading.Lock()
	defer a.reloading.Unlock()
	if a.runCtx != nil {
		// The bots it starts live as long as the process, not as the
		// request (POST /api/v1/reload) that asked for it.
		ctx = a.runCtx
	}
	if shared := sharedChanges(a.cfg, next); len(shared) > 0 {
		return "", fmt.Errorf("%s changed: these are shared by every bot and need a restart", strings.Join(shared, ", "))
	}
	running := map[string]*bot{}
	for _, b := range a.bots {
		running[b.id] = b
	}
	var builders []*builder
	var keep, gone []*bot
	wanted := map[string]bool{}
	for _, bc := range next.BotConfigs() {
		wanted[bc.BotID] = true
		if b, ok := running[bc.BotID]; ok && sameBot(b.cfg, bc) {
			keep = append(keep, b)
			continue
		}
		builders = append(builders, newBuilder(a, bc.BotID, bc, a.opts))
	}
	for _, b := range a.bots {
		if !wanted[b.id] || !slices.Contains(keep, b) {
			gone = append(gone, b)
		}
	}
	if len(builders) == 0 && len(gone) == 0 {
		a.cfg = next
		return "nothing: every bot is as it was", nil
	}
	fresh, err := a.buildBots(ctx, builders, keep)
	if err != nil {
		return "", err
	}
	what := describeReload(keep, gone, fresh, running)
	for _, b := range gone {
		a.stopBot(b)
		if !wantedAgain(fresh, b.id) {
			a.metrics.Forget(b.id) // removed: its series go too
		}
	}
	var errs []error
	for _, b := range fresh {
		if err := a.startBot(ctx, b); err != nil {
			errs = append(errs, fmt.Errorf("bot %s: %w", b.id, err))
		}
	}
	a.setBots(orderBots(next, append(keep, fresh...)))
	a.cfg = next
	a.log.Info("config reloaded", "changes", what)
	return what, errors.Join(errs...)
}

// buildBots builds the bots of builders beside keep, the bots kept
// running; on any failure it releases what it built.
func (a *app) buildBots(ctx context.Context, builders []*builder, keep []*bot) (fresh []*bot, err error) {
	defer func() {
		if err != nil {
			for _, b := range fresh {
				b.close(a.log)
			}
		}
	}()
	for _, b := range builders {
		fresh = append(fresh, b.bt)
		if err := b.decode(ctx); err != nil {
			return fresh, err
		}
	}
	if err := oneServesEach(a.log, append(slices.Clone(keep), fresh...)); err != nil {
		return fresh, err
	}
	for _, b := range builders {
		if err := b.provisionPlugins(ctx); err != nil {
			return fresh, err
		}
		if err := b.buildDispatcher(); err != nil {
			return fresh, err
		}
		if a.http != nil {
			if err := a.openSpool(b.bt, b.bt.cfg, a.log, a.opts.spoolDisk); err != nil {
				return fresh, err
			}
		}
	}
	return fresh, nil
}

// startBot starts a bot a reload built: its services, spool, adapters
// and dispatcher, then its routes and health on the HTTP server.
func (a *app) startBot(ctx context.Context, b *bot) error {
	if err := b.startServices(ctx); err != nil {
		return err
	}
	if b.spool != nil {
		b.spool.Start(ctx)
	}
	for _, ad := range b.adapters {
		if err := a.startAdapter(ctx, b, ad); err != nil {
			a.log.Error("adapter did not start; the other adapters keep running", "bot", b.id, "adapter", ad.Name(), "err", err)
			continue
		}
		b.started = append(b.started, ad)
	}
	if err := b.disp.Start(ctx); err != nil {
		return fmt.Errorf("starting dispatcher: %w", err)
	}
	if a.http != nil {
		a.attachHTTP(b)
	}
	return nil
}

// stopBot stops a bot a reload removed or replaces: its turns drained,
// its adapters, spool and services stopped, its routes and health gone.
func (a *app) stopBot(b *bot) {
	if a.http != nil {
		a.detachHTTP(b)
	}
	errs := []error{b.drain()}
	ctx, cancel := context.WithTimeout(context.Background(), adapterStopTimeout)
	defer cancel()
	errs = append(errs, b.stopAdapters(ctx)...)
	errs = append(errs, b.stopSpool(ctx))
	errs = append(errs, b.stopServices(ctx)...)
	b.close(a.log)
	if b.unwatchSpool != nil {
		b.unwatchSpool()
	}
	if err := errors.Join(errs...); err != nil {
		a.log.Error("stopping a bot for a reload", "bot", b.id, "err", err)
	}
}

// sameBot reports whether a bot's config x and y are the same: its
// adapters' and plugins' sections compared by what they say, not where
// (a bot above it removed moves its lines and its bots[i] path).
func sameBot(x, y *config.Config) bool {
	cx, cy := *x, *y
	if !sameSections(cx.Adapters, cy.Adapters) || !sameSections(cx.Plugins, cy.Plugins) {
		return false
	}
	cx.Adapters, cy.Adapters, cx.Plugins, cy.Plugins = nil, nil, nil, nil
	return reflect.DeepEqual(cx, cy)
}

// sameSections reports whether a and b hold the same sections, by their
// "enabled" and their YAML.
func sameSections(a, b map[string]config.Section) bool {
	if len(a) != len(b) {
		return false
	}
	for k, s := range a {
		t, ok := b[k]
		if !ok || s.Enabled != t.Enabled || nodeText(s.Node) != nodeText(t.Node) {
			return false
		}
	}
	return true
}

// nodeText is a section's YAML as text, "" for none.
func nodeText(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return "\x00unreadable" // never equal to a section that reads
	}
	return string(b)
}

// wantedAgain reports whether fresh, the bots a reload built, has one
// named id (a bot changed, not removed).
func wantedAgain(fresh []*bot, id string) bool {
	return slices.ContainsFunc(fresh, func(f *bot) bool { return f.id == id })
}

// sharedChanges names the shared sections next changes.
func sharedChanges(cur, next *config.Config) []string {
	var out []string
	for name, same := range map[string]bool{
		"store":     reflect.DeepEqual(cur.Store, next.Store),
		"http":      reflect.DeepEqual(cur.HTTP, next.HTTP),
		"log":       reflect.DeepEqual(cur.Log, next.Log),
		"console":   reflect.DeepEqual(cur.Console, next.Console),
		"runs":      reflect.DeepEqual(cur.Runs, next.Runs),
		"scheduler": reflect.DeepEqual(cur.Scheduler, next.Scheduler),
		"llm's pacing (max_concurrency, requests_per_minute, tokens_per_minute)": cur.LLM.MaxConcurrency == next.LLM.MaxConcurrency &&
			cur.LLM.RequestsPerMinute == next.LLM.RequestsPerMinute && cur.LLM.TokensPerMinute == next.LLM.TokensPerMinute,
	} {
		if !same {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// describeReload says which bots a reload added, changed and removed.
func describeReload(keep, gone, fresh []*bot, running map[string]*bot) string {
	var added, changed, removed []string
	for _, b := range fresh {
		if running[b.id] != nil {
			changed = append(changed, b.id)
		} else {
			added = append(added, b.id)
		}
	}
	for _, b := range gone {
		if !wantedAgain(fresh, b.id) {
			removed = append(removed, b.id)
		}
	}
	parts := []string{fmt.Sprintf("%d bots unchanged", len(keep))}
	for _, p := range []struct {
		what string
		ids  []string
	}{{"added", added}, {"changed", changed}, {"removed", removed}} {
		if len(p.ids) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.ids, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// orderBots puts bots in the order next lists them.
func orderBots(next *config.Config, bots []*bot) []*bot {
	var out []*bot
	for _, bc := range next.BotConfigs() {
		for _, b := range bots {
			if b.id == bc.BotID {
				out = append(out, b)
			}
		}
	}
	return out
}

// reloadFile reads the config file again and applies it (reload).
func (a *app) reloadFile(ctx context.Context) (string, error) {
	if a.cfg.File == "" {
		return "", errors.New("parley runs on built-in defaults: there is no config file to read again")
	}
	next, err := config.Load(a.cfg.File, a.opts.lookup)
	if err != nil {
		return "", err
	}
	return a.reload(ctx, next)
}

// reloadOnHangUp reloads the config at each SIGHUP until ctx ends; a
// config refused is logged, the running one kept.
func (a *app) reloadOnHangUp(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if _, err := a.reloadFile(ctx); err != nil {
				a.log.Error("the config was not reloaded; the running one is kept", "err", err)
			}
		}
	}
}
