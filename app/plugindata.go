package app

import "github.com/parleybot/parley/core"

// registered returns every registered plugin with capability T, fresh
// from New: enabled or not, as the capabilities read here (tables, the
// data in them) do not depend on the config.
func registered[T any]() []T {
	reg := core.Plugins()
	var out []T
	for _, name := range reg.Names() {
		info, _ := reg.Lookup(name)
		if v, ok := info.New().(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// pluginMigrators are the registered plugins that keep tables of their
// own. Every one migrates, enabled or not: a plugin enabled later finds
// its tables, and one turned off keeps its data.
func pluginMigrators() []core.Migrator { return registered[core.Migrator]() }

// pluginFacts reads the facts a registered plugin keeps on db (nil: no
// plugin keeps any), for the console and /forget: a user can still see
// and erase them while the plugin is turned off, as before plugins owned
// their tables.
func pluginFacts(db core.Database) core.FactKeeper {
	if owners := registered[core.FactOwner](); len(owners) > 0 {
		return owners[0].FactKeeper(db)
	}
	return nil
}

// pluginMood reads the mood history a registered plugin keeps on db (nil:
// no plugin keeps one), for the console's chart.
func pluginMood(db core.Database) core.MoodKeeper {
	if owners := registered[core.MoodOwner](); len(owners) > 0 {
		return owners[0].MoodKeeper(db)
	}
	return nil
}
