package config

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	// Validation and Location must not depend on the host having tzdata.
	_ "time/tzdata"

	"gopkg.in/yaml.v3"
)

// DefaultFailureMessage is bot.failure_message's default.
const DefaultFailureMessage = "Sorry, I can't answer right now. Please try again in a little while."

// DefaultBusyMessage is bot.busy_message's default.
const DefaultBusyMessage = "I'm still answering your last message. One moment, please."

// Environment variables that secrets default to.
const (
	// EnvOpenAIAPIKey is llm.api_key's default source.
	EnvOpenAIAPIKey = "OPENAI_API_KEY"
	// EnvAPIToken is http.api_token's default source.
	EnvAPIToken = "PARLEY_API_TOKEN"
)

// Default returns the built-in defaults, without reading the environment:
// llm.api_key and http.api_token are empty. Use DefaultWithEnv for what a
// missing config file means.
func Default() *Config {
	return &Config{
		Store: Store{Driver: "sqlite", DSN: "parley.db", MaxFileBytes: 500 << 20, Spool: Spool{MaxSize: 64 << 20}},
		LLM: LLM{
			BaseURL:        "https://api.openai.com/v1",
			Model:          "gpt-4o-mini",
			Timeout:        60 * time.Second,
			MaxToolRounds:  4,
			MaxRetries:     3,
			MaxTokens:      2048,
			MaxConcurrency: 256,
			Vision:         true,
			Transcription:  Transcription{Model: "whisper-1"},
		},
		Bot: Bot{
			Timezone:       "UTC",
			AllowUsers:     []string{},
			Owners:         []string{},
			DMPolicy:       "open",
			FailureMessage: DefaultFailureMessage,
			BusyMessage:    DefaultBusyMessage,
			Limits:         Limits{Exempt: []string{}},
			Streaming:      Streaming{Enabled: true, Interval: 400 * time.Millisecond},
			PromiseCheck:   true,
		},
		Adapters: map[string]Section{},
		Runs: Runs{
			Debounce:         1500 * time.Millisecond,
			DuringGeneration: "queue",
			StaleAfter:       2 * time.Minute,
			TurnTimeout:      5 * time.Minute,
		},
		Scheduler: Scheduler{
			MaxAttempts:               3,
			LateGrace:                 24 * time.Hour,
			MaxPendingPerConversation: 50,
			JobLease:                  time.Minute,
			MaxSendsInDoubt:           4,
		},
		Media:    Media{MaxBytes: 20 << 20, MaxImagePx: 1568, MaxDocumentChars: 20000, MaxPerTurn: 10},
		Voice:    Voice{Replies: VoiceNever, Model: "tts-1", Voice: "alloy", MaxCharacters: 1000},
		MCP:      MCP{Servers: map[string]MCPServer{}},
		Commands: Commands{Enabled: true},
		Console:  Console{Prices: map[string]Price{}},
		HTTP:     defaultHTTP(),
		Log:      Log{Format: "text", Level: "info"},
		Plugins:  map[string]Section{},
	}
}

// defaultHTTP is the http section's defaults.
func defaultHTTP() HTTP {
	return HTTP{Listen: "127.0.0.1:8080", TrustedProxies: []string{}, MaxConnections: 2048, MaxConnectionsPerIP: 64,
		ReadTimeout: 30 * time.Second, MinBodyRate: 1 << 10}
}

// DefaultWithEnv returns Default with the secrets that default to the
// environment filled in from lookup (os.LookupEnv in production):
// llm.api_key from OPENAI_API_KEY and http.api_token from PARLEY_API_TOKEN.
// This is the configuration of a bot run without a config file, and the base
// Load decodes a file onto.
func DefaultWithEnv(lookup func(string) (string, bool)) *Config {
	c := Default()
	if lookup == nil {
		return c
	}
	if v, ok := lookup(EnvOpenAIAPIKey); ok {
		c.LLM.APIKey = Secret(v)
	}
	if v, ok := lookup(EnvAPIToken); ok {
		c.HTTP.APIToken = Secret(v)
	}
	return c
}

// Load reads the YAML file at path and returns it decoded onto
// DefaultWithEnv(lookup) and validated. lookup resolves ${VAR} references
// (os.LookupEnv in production; nil means an empty environment). A missing
// file is an error wrapping fs.ErrNotExist, so a caller can fall back to
// DefaultWithEnv; problems in the file are *Error values (see Parse).
func Load(path string, lookup func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(path, data, lookup)
}

// Parse decodes YAML data as the config file named file (used in error
// messages and Section.File) onto DefaultWithEnv(lookup) and validates it.
// It returns every problem found, in file order, as *Error values joined
// with errors.Join.
func Parse(file string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = noEnv
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, err)
	}
	cfg := DefaultWithEnv(lookup)
	cfg.File = file
	d := newDecoder(file)
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	if root.Kind != 0 && root.Kind != yaml.DocumentNode {
		expandTree(root, "", lookup, d)
		d.value(root, reflect.ValueOf(cfg).Elem(), "", 0)
		d.decodeBots(cfg)
	}
	for _, p := range cfg.problems() {
		if d.failed[p.key] {
			continue
		}
		line := p.line
		if line == 0 {
			line = d.lines[p.key]
		}
		if line == 0 && p.lineOf != "" {
			line = d.lines[p.lineOf]
		}
		msg := p.message(d.fromEnv[p.key])
		if v := d.unset[p.key]; v != "" {
			msg = p.msg + ": ${" + v + "} is not set"
		}
		d.errs = append(d.errs, &Error{File: file, Line: line, Key: p.key, Msg: msg})
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	if len(d.unset) > 0 {
		cfg.Unset = d.unset
	}
	return cfg, nil
}

// Location returns bot.timezone loaded, or UTC if it does not load (Load
// has already rejected such a zone).
func (c *Config) Location() *time.Location {
	loc, err := time.LoadLocation(c.Bot.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// LightModel returns llm.light_model, or llm.model when it is empty.
func (c *Config) LightModel() string {
	if c.LLM.LightModel != "" {
		return c.LLM.LightModel
	}
	return c.LLM.Model
}

// UnsetUnder names the unset variables of the values under path
// ("adapters.telegram"), each with its key, in key order: what an error
// about a whole section adds.
func (c *Config) UnsetUnder(path string) string {
	var keys []string
	for k := range c.Unset {
		if k == path || strings.HasPrefix(k, path+".") {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + " is ${" + c.Unset[k] + "}"
	}
	if len(parts) == 1 {
		return "; " + parts[0] + ", which is not set"
	}
	return "; " + strings.Join(parts, ", ") + ", which are not set"
}
