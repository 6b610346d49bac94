package app

import "github.com/parleybot/parley/core"

// pluginMigrators are the registered plugins that keep tables of their
// own, fresh from New: every one, enabled or not, so that the schema does
// not depend on the config (a plugin enabled later finds its tables, and
// one disabled keeps them).
func pluginMigrators() []core.Migrator {
	reg := core.Plugins()
	var out []core.Migrator
	for _, name := range reg.Names() {
		info, _ := reg.Lookup(name)
		if m, ok := info.New().(core.Migrator); ok {
			out = append(out, m)
		}
	}
	return out
}

// firstPlugin returns the first of plugins with capability T (the zero T,
// nil, when none has it): the plugin whose data the console and the chat
// commands show.
func firstPlugin[T any](plugins []core.Plugin) T {
	for _, p := range plugins {
		if v, ok := p.(T); ok {
			return v
		}
	}
	var zero T
	return zero
}
