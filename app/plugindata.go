package app

import (
	"context"
	"fmt"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/userdata"
)

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

// exportFiles is everything kept about the user of conversation id with
// its bot, as /export and the API hand it over: JSON and Markdown.
func exportFiles(ctx context.Context, st *store.Store, db core.Database, id int64, now time.Time) ([]core.OutboundFile, error) {
	d, err := userdata.Gather(ctx, userdata.WithMood(st, pluginMood(db)), pluginFacts(db), id, now)
	if err != nil {
		return nil, err
	}
	if b := st.Bot(); b != "" && d.BotID != b {
		return nil, fmt.Errorf("conversation %d is another bot's: %w", id, core.ErrNotFound)
	}
	js, err := d.JSON()
	if err != nil {
		return nil, err
	}
	name := d.FileName()
	return []core.OutboundFile{
		{Kind: core.AttachDocument, Name: name + ".json", MIME: "application/json", Data: js},
		{Kind: core.AttachDocument, Name: name + ".md", MIME: "text/markdown; charset=utf-8", Data: []byte(d.Markdown())},
	}, nil
}
