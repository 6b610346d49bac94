package config

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultBotID is the id of the one bot a config without bots: runs.
const DefaultBotID = "default"

// botIDRE is what a bot's id may be: it is stored with every row.
var botIDRE = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// BotConfig is one entry of bots:, a bot with the sections a single bot
// has. Parse fills what an entry leaves out from the top level: a key the
// bot's bot, llm, voice, media, commands or an mcp server of the same name
// leaves out keeps the top-level value; a plugin section the bot leaves
// out is the top-level one (one it writes replaces it whole). Adapters
// are never inherited: two bots cannot share a token.
type BotConfig struct {
	// ID is the bot's id, 1 to 32 of a-z, 0-9, "-" and "_" (required,
	// unique).
	ID       string             `yaml:"id"`
	Bot      Bot                `yaml:"bot"`
	LLM      LLM                `yaml:"llm"`
	Adapters map[string]Section `yaml:"adapters"`
	Plugins  map[string]Section `yaml:"plugins"`
	MCP      MCP                `yaml:"mcp"`
	Voice    Voice              `yaml:"voice"`
	Media    Media              `yaml:"media"`
	Commands Commands           `yaml:"commands"`
}

// sharedSections are the top-level sections every bot shares: one store,
// one HTTP server, one log, one console, one run queue and job engine.
var sharedSections = []string{"store", "http", "log", "console", "runs", "scheduler"}

// sharedLLMKeys are the llm keys that pace model requests: set once, for
// every bot (the bots on one provider account keep them together).
var sharedLLMKeys = []string{"max_concurrency", "requests_per_minute", "tokens_per_minute"}

// BotConfigs returns the configuration each bot runs with, in the order of
// bots:: the shared sections from the top level, the bot's own sections
// from its entry, and BotID set. A config without bots: is one bot,
// DefaultBotID, whose Config is c's own values.
func (c *Config) BotConfigs() []*Config {
	if len(c.Bots) == 0 {
		one := *c
		if one.BotID == "" {
			one.BotID = DefaultBotID
		}
		return []*Config{&one}
	}
	out := make([]*Config, len(c.Bots))
	for i, b := range c.Bots {
		one := *c
		one.Bots = nil
		one.BotID = b.ID
		one.Bot, one.LLM, one.Voice, one.Media, one.Commands = b.Bot, b.LLM, b.Voice, b.Media, b.Commands
		one.Adapters, one.Plugins, one.MCP = b.Adapters, b.Plugins, b.MCP
		// Model requests are paced by the same numbers for every bot.
		one.LLM.MaxConcurrency = c.LLM.MaxConcurrency
		one.LLM.RequestsPerMinute = c.LLM.RequestsPerMinute
		one.LLM.TokensPerMinute = c.LLM.TokensPerMinute
		out[i] = &one
	}
	return out
}

// inherited is a bot entry holding the top-level sections it inherits,
// copied so that decoding the entry onto it leaves the top level as is.
func (c *Config) inherited() BotConfig {
	servers := make(map[string]MCPServer, len(c.MCP.Servers))
	for name, s := range c.MCP.Servers {
		s.Args, s.Tools = slices.Clone(s.Args), slices.Clone(s.Tools)
		s.Env, s.Headers = maps.Clone(s.Env), maps.Clone(s.Headers)
		if s.Enabled != nil {
			on := *s.Enabled
			s.Enabled = &on
		}
		servers[name] = s
	}
	b := BotConfig{Bot: c.Bot, LLM: c.LLM, Voice: c.Voice, Media: c.Media, Commands: c.Commands,
		Adapters: map[string]Section{}, Plugins: maps.Clone(c.Plugins), MCP: MCP{Servers: servers}}
	b.Bot.AllowUsers, b.Bot.Limits.Exempt = slices.Clone(c.Bot.AllowUsers), slices.Clone(c.Bot.Limits.Exempt)
	b.Bot.Owners = slices.Clone(c.Bot.Owners)
	if b.Plugins == nil {
		b.Plugins = map[string]Section{}
	}
	return b
}

// decodeBots decodes the bots: list recorded while decoding, each entry
// onto what it inherits from c's top level.
func (d *decoder) decodeBots(c *Config) {
	n := d.bots
	if n == nil || isNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.wrongShape(n, "bots", "a list")
		return
	}
	c.Bots = make([]BotConfig, len(n.Content))
	for i, item := range n.Content {
		path := indexPath("bots", i)
		c.Bots[i] = c.inherited()
		for item.Kind == yaml.AliasNode && item.Alias != nil && item.Alias != item {
			item = item.Alias
		}
		d.lines[path] = item.Line
		if item.Kind != yaml.MappingNode {
			d.wrongShape(item, path, "a mapping")
			d.failed[path+".id"] = true // it has none for being no mapping
			continue
		}
		d.structure(d.withoutShared(item, path), reflect.ValueOf(&c.Bots[i]).Elem(), path, 1)
		for _, k := range sharedLLMKeys {
			if kp := path + ".llm." + k; d.lines[kp] > 0 && !d.failed[kp] {
				d.errs = append(d.errs, &Error{File: d.file, Line: d.lines[kp], Key: kp,
					Msg: "is shared by every bot: set llm." + k + " at the top level"})
				d.failed[kp] = true
			}
		}
	}
}

// withoutShared returns a bot's mapping without the shared sections'
// keys, each reported as in the wrong place.
func (d *decoder) withoutShared(item *yaml.Node, path string) *yaml.Node {
	out := *item
	out.Content = nil
	for i := 0; i+1 < len(item.Content); i += 2 {
		k := item.Content[i]
		if k.Kind == yaml.ScalarNode && slices.Contains(sharedSections, k.Value) {
			d.fail(k, joinPath(path, k.Value), "is shared by every bot: set it at the top level, not in a bot")
			continue
		}
		out.Content = append(out.Content, k, item.Content[i+1])
	}
	return &out
}

// tokenKeys are the adapters' keys that name one platform account, which
// two bots cannot share.
var tokenKeys = []struct{ adapter, key, account string }{
	{"telegram", "token", "Telegram bot"},
	{"discord", "token", "Discord bot"},
	{"slack", "bot_token", "Slack app"},
	{"slack", "app_token", "Slack app"},
}

// botsProblems checks bots: (ids, tokens, adapters beside it) and each
// bot's sections as it runs them, under its path ("bots[1].llm.model"). A
// bot's problem that is the top level's, inherited, is reported once, at
// the top level.
func (c *Config) botsProblems(l *problemList) {
	if c.Bots == nil {
		return
	}
	if len(c.Bots) == 0 {
		l.add("bots", "must list at least one bot, or be left out for one bot", nil)
		return
	}
	if len(c.Adapters) > 0 {
		l.add("adapters", "must not be set beside bots: each bot has its own, under bots[N].adapters "+
			"(two bots cannot share a token)", nil)
	}
	top := map[problem]bool{}
	for _, p := range l.ps {
		top[p] = true
	}
	ids := map[string]int{}
	for i, b := range c.BotConfigs() {
		prefix := indexPath("bots", i) + "."
		switch j, dup := ids[b.BotID]; {
		case b.BotID == "":
			l.push(problem{key: prefix + "id", lineOf: strings.TrimSuffix(prefix, "."),
				msg: `is required: 1 to 32 of a-z, 0-9, "-" and "_"`})
		case !botIDRE.MatchString(b.BotID):
			l.add(prefix+"id", `must be 1 to 32 of a-z, 0-9, "-" and "_"`, b.BotID)
		case dup:
			l.add(prefix+"id", fmt.Sprintf("is bots[%d]'s id too: each bot needs its own", j), b.BotID)
		default:
			ids[b.BotID] = i
		}
		sub := problemList{prefix: prefix}
		b.botSectionProblems(&sub)
		if b.LLM.Timeout != c.LLM.Timeout && c.Runs.TurnTimeout > 0 && c.Runs.TurnTimeout <= b.LLM.Timeout {
			sub.add("llm.timeout", fmt.Sprintf("must be shorter than runs.turn_timeout (%s): a turn makes at least one model call",
				c.Runs.TurnTimeout), b.LLM.Timeout)
		}
		for _, k := range sharedLLMKeys {
			if !c.sameLLMKey(c.Bots[i].LLM, k) {
				sub.add("llm."+k, "is shared by every bot: set llm."+k+" at the top level", nil)
			}
		}
		for _, p := range sub.ps {
			unprefixed := p
			unprefixed.key, unprefixed.lineOf = strings.TrimPrefix(p.key, prefix), strings.TrimPrefix(p.lineOf, prefix)
			if !top[unprefixed] {
				l.ps = append(l.ps, p)
			}
		}
	}
	c.tokenProblems(l)
}

// sameLLMKey reports whether a bot's llm has the top level's value of a
// shared key.
func (c *Config) sameLLMKey(b LLM, key string) bool {
	switch key {
	case "max_concurrency":
		return b.MaxConcurrency == c.LLM.MaxConcurrency
	case "requests_per_minute":
		return b.RequestsPerMinute == c.LLM.RequestsPerMinute
	default:
		return b.TokensPerMinute == c.LLM.TokensPerMinute
	}
}

// tokenProblems reports two enabled adapters of one platform, in two
// bots, with the same token; the message names both keys, never the
// token.
func (c *Config) tokenProblems(l *problemList) {
	for _, tk := range tokenKeys {
		seen := map[string]string{}
		for i, b := range c.Bots {
			sec, ok := b.Adapters[tk.adapter]
			if !ok || !sec.Enabled {
				continue
			}
			n := sectionValue(sec.Node, tk.key)
			if n == nil || n.Value == "" {
				continue
			}
			key := fmt.Sprintf("bots[%d].adapters.%s.%s", i, tk.adapter, tk.key)
			if first, dup := seen[n.Value]; dup {
				l.push(problem{key: key, line: n.Line,
					msg: fmt.Sprintf("is the same as %s: two bots cannot share one %s", first, tk.account)})
				continue
			}
			seen[n.Value] = key
		}
	}
}

// sectionValue is the scalar under key in a section's mapping, aliases
// followed, or nil.
func sectionValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key {
			continue
		}
		v := n.Content[i+1]
		for depth := 0; v.Kind == yaml.AliasNode && v.Alias != nil && depth < maxDepth; depth++ {
			v = v.Alias
		}
		if v.Kind == yaml.ScalarNode {
			return v
		}
	}
	return nil
}
