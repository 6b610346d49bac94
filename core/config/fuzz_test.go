package config_test

import (
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/parleybot/parley/core/config"
)

// fuzzFile is the name the fuzz target gives its config file.
const fuzzFile = "fuzz/parley.yaml"

// envMarker starts every value of the fuzz target's environment, so that
// one showing up in an error is easy to find.
const envMarker = "ENVSECRET-"

// fuzzEnv is set for every variable except those starting with UNSET.
func fuzzEnv(name string) (string, bool) {
	if strings.HasPrefix(name, "UNSET") {
		return "", false
	}
	return envMarker + name, true
}

// moduleSection is what a module might decode its section into.
type moduleSection struct {
	Token   config.Secret     `yaml:"token"`
	Mode    string            `yaml:"mode"`
	Timeout time.Duration     `yaml:"timeout"`
	Count   int               `yaml:"count"`
	On      bool              `yaml:"on"`
	Users   []string          `yaml:"users"`
	Limits  map[string]uint16 `yaml:"limits"`
	When    time.Time         `yaml:"when"`
	Extra   any               `yaml:"extra"`
}

// FuzzParse checks the config loader on any YAML: Parse (and a module's
// Section.Decode) never panics and is deterministic; every error is an
// *Error that names the file and, past a YAML syntax error, a line inside
// it or a key; a config that loads validates; and no error ever shows a
// value from the environment (which may be a secret set in the wrong place)
// or the value written for a secret key (store.dsn, llm.api_key and
// http.api_token in Parse's errors, a module's token in its section's),
// quoted, or anywhere when it is 8 bytes or more, whatever else in the
// file repeats it.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		f.Fatal(err)
	}
	// The example without its comments: a smaller input fuzzes faster
	// and minimizes in seconds.
	f.Add(withoutComments(example))
	for _, s := range []string{
		"",
		"# only a comment\n",
		"---\n---\n",
		"[1, 2]",
		"just a string",
		"llm:\n  api_key: sk-live-0123456789\n  base_url: nope\n",
		"llm:\n  api_key: &k sk-live-0123456789\nruns:\n  workers: *k\n",
		"llm: {api_key: &k \"sk-a b\"}\nbot: {timezone: *k, allow_users: [*k]}\nlog: {level: *k}\n",
		"runs: {workers: &w sk-first}\nllm: {api_key: *w}\n",
		"store: {dsn: \"postgres://u:hunter2@db/x\"}\nhttp: {listen: \"postgres://u:hunter2@db/x\"}\n",
		"http: {api_token: tok123, listen: tok123}\n",
		"adapters:\n  telegram:\n    token: &t 123:ABC\n    count: *t\n    mode: [*t]\n",
		"adapters: {x: {token: s3cr3t, timeout: s3cr3t, when: s3cr3t, limits: {a: s3cr3t}}}\n",
		"llm: {model: \"${OPENAI_API_KEY}\", timeout: \"${OPENAI_API_KEY}\", max_retries: \"${X}\"}\n",
		"runs: {workers: \"${UNSET_W:-12}\", debounce: \"${UNSET_D:-2s}\"}\nbot: {timezone: \"${TZ}\"}\n",
		"llm: {base_url: \"${A\", model: \"$${B}\", light_model: \"${=}\"}\n",
		"a: &a [*a]\n",
		"llm: &l {<<: *l}\n",
		"base: &b {timeout: 5s}\nllm: {<<: *b}\n",
		"llm: {<<: [{timeout: 1s}, {max_retries: 99}]}\n",
		"llm:\n  timeout: -1s\n  max_tool_rounds: 1e400\n  max_retries: 0x10\nruns: {workers: 99999999999999999999}\n",
		"llm:\n\ttimeout: 1s\n",
		"\ufeffstore: {driver: mysql}\n",
		"store: !!binary aGVsbG8=\nlog: !!str 5\n",
		"plugins: {persona: ~, memory: {enabled: maybe}, mood: []}\n",
		"adapters:\n  web: {enabled: true}\n  web: {enabled: false}\n",
		"? [a]\n: b\n",
		"bot: {allow_users: [\"telegram:1\", \"nope\", \"x: y\"]}\n",
		"bots:\n  - id: ada\n    llm: {model: gpt-4o, api_key: sk-ada-0123456789}\n    adapters: {telegram: {token: \"1:a\"}}\n" +
			"  - id: bob\n    bot: {timezone: Europe/Paris}\n    plugins: {persona: {name: Bob}}\n    adapters: {discord: {token: d}}\n",
		"bots:\n  - id: Ada\n  - id: ada\n  - id: ada\n  - bot: {}\n  - ~\n  - [1]\n",
		"bots:\n  - &b {id: a, adapters: {telegram: {token: &t \"1:a\"}}}\n  - {<<: *b, id: b}\n  - {id: c, adapters: {slack: {bot_token: *t}}}\n",
		"bots: [{id: a, store: {}, llm: {max_concurrency: 1, timeout: 1h}, mcp: {servers: {x: {}}}}]\nadapters: {web: {}}\n",
		"bots: []\n",
		"bots: {id: a}\nmcp: {servers: {x: {command: y, env: {K: v}}}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(fuzzFile, data, fuzzEnv)
		cfg2, err2 := config.Parse(fuzzFile, data, fuzzEnv)
		if errText(err) != errText(err2) || !reflect.DeepEqual(cfg, cfg2) {
			t.Fatalf("Parse is not deterministic: %v / %v", err, err2)
		}
		secrets := secretValues(data)
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a config with its error %v", err)
			}
			checkErrors(t, err, data, secrets)
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("a config that loaded does not validate: %v", err)
		}
		if cfg.File != fuzzFile || cfg.Location() == nil {
			t.Fatalf("loaded config: file %q, location %v", cfg.File, cfg.Location())
		}
		ids := map[string]bool{}
		for _, bot := range cfg.BotConfigs() {
			if err := bot.Validate(); err != nil || ids[bot.BotID] || bot.BotID == "" {
				t.Fatalf("bot %q of a config that loaded: %v (ids so far %v)", bot.BotID, err, ids)
			}
			ids[bot.BotID] = true
			for _, sections := range []map[string]config.Section{bot.Adapters, bot.Plugins} {
				for _, sec := range sections {
					var m moduleSection
					if err := sec.Decode(&m); err != nil {
						checkErrors(t, err, data, appendSecret(nil, child(sec.Node, "token")))
					}
				}
			}
		}
	})
}

// checkErrors checks what Parse and Section.Decode promise of an error.
func checkErrors(t *testing.T, err error, data []byte, secrets []string) {
	t.Helper()
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	// YAML breaks lines at \n, \r, and NEL, LS and PS.
	lines := 1
	for _, brk := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		lines += strings.Count(string(data), brk)
	}
	for _, e := range errs {
		var ce *config.Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %q (%T) is not a *config.Error", e, e)
		}
		if ce.File != fuzzFile || !strings.HasPrefix(ce.Error(), fuzzFile+":") || ce.Msg == "" {
			t.Fatalf("error %q does not name the file %s, or says nothing", ce, fuzzFile)
		}
		if ce.Line < 0 || ce.Line > lines+1 {
			t.Fatalf("error %q: line %d of a %d-line file", ce, ce.Line, lines)
		}
		// Past a syntax error every error says where: a line, or the key
		// of a default that does not validate.
		if ce.Key == "" && ce.Line == 0 && !strings.HasPrefix(ce.Msg, "invalid YAML") {
			t.Fatalf("error %q names neither a line nor a key", ce)
		}
	}
	if text := err.Error(); strings.Contains(text, envMarker) && !strings.Contains(string(data), envMarker) {
		t.Fatalf("a value from the environment is in the error:\n%s", text)
	}
	for _, e := range errs {
		var ce *config.Error
		errors.As(e, &ce)
		for _, s := range secrets {
			if strings.Contains(ce.Msg, strconv.Quote(s)) || len(s) >= 8 && strings.Contains(ce.Msg, s) {
				t.Fatalf("the secret %q is in the error %q", s, ce)
			}
		}
	}
}

// secretValues returns the values written for store.dsn, llm.api_key and
// http.api_token in data, and each bot's llm.api_key, as far as yaml.v3
// reads it, aliases followed.
func secretValues(data []byte) []string {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	var out []string
	for section, key := range map[string]string{"store": "dsn", "llm": "api_key", "http": "api_token"} {
		out = appendSecret(out, child(child(doc.Content[0], section), key))
	}
	if bots := child(doc.Content[0], "bots"); bots != nil && bots.Kind == yaml.SequenceNode {
		for _, b := range bots.Content {
			out = appendSecret(out, child(child(b, "llm"), "api_key"))
		}
	}
	return out
}

// appendSecret appends n's value when n is a scalar (through aliases) that
// can be told apart in a message: not empty, not expanded (no "$"), and
// not itself the text that stands for a secret.
func appendSecret(out []string, n *yaml.Node) []string {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" || strings.Contains(n.Value, "$") ||
		strings.Contains("[redacted]", n.Value) || strings.Contains(n.Value, "redacted") {
		return out
	}
	return append(out, n.Value)
}

// child is the value of key in mapping n (aliases followed), or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// withoutComments drops the comment lines of a YAML file and the comments
// after values (" #" on; the example quotes no "#").
func withoutComments(data []byte) []byte {
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimRight(line, " \n"); line != "" && !strings.HasPrefix(line, "#") {
			b.WriteString(line + "\n")
		}
	}
	return []byte(b.String())
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
