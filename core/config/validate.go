package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// problem is one invalid value: its key path, what is wrong, and the value
// as shown in the message ("" for none).
type problem struct {
	key, msg, got string
	// bare joins got with a space ("unknown time zone "X"") instead of ", got ".
	bare bool
	// lineOf is the key whose line the error points at when key itself is
	// not in the file (a default at odds with a value that is).
	lineOf string
	// line is the value's line when it is inside a section kept undecoded
	// (an adapter's token), which has no key's line to look up.
	line int
}

// message joins msg and got. A value that came from the environment is not
// shown, since it may be a secret set in the wrong place.
func (p problem) message(fromEnv bool) string {
	switch {
	case p.got == "":
		return p.msg
	case fromEnv:
		return p.msg + ", got " + hiddenEnvValue
	case p.bare:
		return p.msg + " " + p.got
	default:
		return p.msg + ", got " + p.got
	}
}

// Validate checks every value, for a Config built or changed in code (Load
// and Parse already validate, with line numbers). Errors are *Error values
// without a line, joined with errors.Join.
func (c *Config) Validate() error {
	var errs []*Error
	for _, p := range c.problems() {
		errs = append(errs, &Error{File: c.File, Key: p.key, Msg: p.message(false)})
	}
	return joinErrors(errs)
}

// problems lists invalid values in field order (the sections' checks
// below keep it, so that Validate's errors always come in one order).
func (c *Config) problems() []problem {
	var l problemList
	c.storeProblems(&l)
	c.botSectionProblems(&l)
	c.runsProblems(&l)
	c.schedulerProblems(&l)
	for _, model := range slices.Sorted(maps.Keys(c.Console.Prices)) {
		p := c.Console.Prices[model]
		if p.Prompt < 0 || p.Completion < 0 {
			l.add("console.prices."+model, "prices must not be negative", fmt.Sprintf("prompt %g, completion %g", p.Prompt, p.Completion))
		}
	}
	if _, port, err := net.SplitHostPort(c.HTTP.Listen); err != nil || port == "" {
		l.add("http.listen", `must be host:port (e.g. "127.0.0.1:8080")`, c.HTTP.Listen)
	}
	c.httpProblems(l.add)
	l.oneOf("log.format", c.Log.Format, "text", "json")
	l.oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error")
	c.botsProblems(&l)
	return l.ps
}

// botSectionProblems checks the sections a bot has (each bot's in
// bots: too, under its prefix).
func (c *Config) botSectionProblems(l *problemList) {
	c.llmProblems(l)
	c.botProblems(l)
	c.intakeProblems(l)
	c.mcpProblems(l.add)
	if m := c.Retention.Messages; m != 0 && m < time.Hour {
		l.add("retention.messages", "must be 0 (keep every message) or at least 1h", m)
	}
}

// problemList collects problems in the order they are found, their keys
// under prefix ("bots[1].").
type problemList struct {
	ps     []problem
	prefix string
}

// push adds p with its keys under the list's prefix.
func (l *problemList) push(p problem) {
	p.key = l.prefix + p.key
	if p.lineOf != "" {
		p.lineOf = l.prefix + p.lineOf
	}
	l.ps = append(l.ps, p)
}

// add is a problem with key, got shown quoted when a string.
func (l *problemList) add(key, msg string, got any) {
	p := problem{key: key, msg: msg}
	switch got := got.(type) {
	case nil:
	case string:
		p.got = strconv.Quote(got)
	default:
		p.got = fmt.Sprint(got)
	}
	l.push(p)
}

// oneOf is a problem unless got is one of allowed.
func (l *problemList) oneOf(key, got string, allowed ...string) {
	if !slices.Contains(allowed, got) {
		l.add(key, "must be "+orList(allowed), got)
	}
}

func (c *Config) storeProblems(l *problemList) {
	l.oneOf("store.driver", c.Store.Driver, "sqlite", "postgres")
	if c.Store.DSN == "" {
		l.add("store.dsn", "must not be empty", nil)
	}
	if c.Store.MaxFileBytes < 0 {
		l.add("store.max_file_bytes", "must not be negative (0 keeps no file bytes)", c.Store.MaxFileBytes.String())
	}
	if c.Store.Spool.MaxSize < 64<<10 {
		l.add("store.spool.max_size", "must be at least 64KiB", c.Store.Spool.MaxSize.String())
	}
}

func (c *Config) llmProblems(l *problemList) {
	if u, err := url.Parse(c.LLM.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		l.add("llm.base_url", "must be an absolute http or https URL", c.LLM.BaseURL)
	}
	if c.LLM.Model == "" {
		l.add("llm.model", "must not be empty", nil)
	}
	positive(l.add, "llm.timeout", c.LLM.Timeout)
	between(l.add, "llm.max_tool_rounds", c.LLM.MaxToolRounds, 1, 32)
	between(l.add, "llm.max_retries", c.LLM.MaxRetries, 0, 10)
	between(l.add, "llm.max_tokens", c.LLM.MaxTokens, 16, 1<<20)
	notNegativeCount(l.add, "llm.max_concurrency", c.LLM.MaxConcurrency)
	notNegativeCount(l.add, "llm.requests_per_minute", c.LLM.RequestsPerMinute)
	notNegativeCount(l.add, "llm.tokens_per_minute", c.LLM.TokensPerMinute)
}

func (c *Config) botProblems(l *problemList) {
	if _, err := time.LoadLocation(c.Bot.Timezone); err != nil {
		l.push(problem{key: "bot.timezone", msg: "unknown time zone", got: strconv.Quote(c.Bot.Timezone), bare: true})
	}
	for i, u := range c.Bot.AllowUsers {
		if !isUserID(u) {
			l.add(indexPath("bot.allow_users", i), `must look like "platform:user_id" (e.g. "telegram:12345")`, u)
		}
	}
	for i, u := range c.Bot.Owners {
		if !isUserID(u) {
			l.add(indexPath("bot.owners", i), `must look like "platform:user_id" (e.g. "telegram:12345")`, u)
		}
	}
	l.oneOf("bot.dm_policy", c.Bot.DMPolicy, "open", "allowlist", "pairing")
	if c.Bot.DMPolicy == "allowlist" && len(c.Bot.AllowUsers) == 0 && len(c.Bot.Owners) == 0 {
		l.add("bot.dm_policy", "allowlist lets in only bot.allow_users and bot.owners, and both are empty: nobody could talk to the bot", c.Bot.DMPolicy)
	}
	notNegativeCount(l.add, "bot.limits.messages_per_minute", c.Bot.Limits.MessagesPerMinute)
	notNegativeCount(l.add, "bot.limits.turns_per_day", c.Bot.Limits.TurnsPerDay)
	notNegativeCount(l.add, "bot.limits.tokens_per_day", c.Bot.Limits.TokensPerDay)
	for i, u := range c.Bot.Limits.Exempt {
		if !isUserID(u) {
			l.add(indexPath("bot.limits.exempt", i), `must look like "platform:user_id" (e.g. "telegram:12345")`, u)
		}
	}
	if strings.TrimSpace(c.Bot.FailureMessage) == "" {
		l.add("bot.failure_message", "must not be empty", nil)
	}
	if strings.TrimSpace(c.Bot.BusyMessage) == "" {
		l.add("bot.busy_message", "must not be empty", nil)
	}
	if a := c.Bot.AckReaction; a != "" && !isEmoji(a) {
		l.add("bot.ack_reaction", `must be one emoji (e.g. "👀"), or "" for none`, a)
	}
	if c.Bot.Streaming.Interval < 50*time.Millisecond {
		l.add("bot.streaming.interval", "must be at least 50ms (the least time between two updates of one reply)", c.Bot.Streaming.Interval)
	}
}

func (c *Config) runsProblems(l *problemList) {
	notNegative(l.add, "runs.debounce", c.Runs.Debounce)
	l.oneOf("runs.during_generation", c.Runs.DuringGeneration, "reject", "queue", "restart")
	positive(l.add, "runs.stale_after", c.Runs.StaleAfter)
	if c.Runs.Workers != nil {
		l.add("runs.workers", "is no longer used: turns waiting on the model hold no worker; "+
			"bound model requests in flight with llm.max_concurrency (default 256) and remove runs.workers", nil)
	}
	switch {
	case c.Runs.TurnTimeout <= 0:
		l.add("runs.turn_timeout", "must be greater than 0", c.Runs.TurnTimeout)
	case c.LLM.Timeout > 0 && c.Runs.TurnTimeout <= c.LLM.Timeout:
		// A turn makes at least one model call, often several.
		l.push(problem{key: "runs.turn_timeout", lineOf: "llm.timeout",
			msg: fmt.Sprintf("must be longer than llm.timeout (%s): a turn makes at least one model call", c.LLM.Timeout),
			got: c.Runs.TurnTimeout.String()})
	}
}

func (c *Config) schedulerProblems(l *problemList) {
	atLeastOne(l.add, "scheduler.max_attempts", c.Scheduler.MaxAttempts)
	notNegative(l.add, "scheduler.late_grace", c.Scheduler.LateGrace)
	atLeastOne(l.add, "scheduler.max_pending_per_conversation", c.Scheduler.MaxPendingPerConversation)
	if c.Scheduler.JobLease < time.Second {
		l.add("scheduler.job_lease", "must be at least 1s", c.Scheduler.JobLease)
	}
	between(l.add, "scheduler.max_sends_in_doubt", c.Scheduler.MaxSendsInDoubt, 1, 64)
}

// intakeProblems checks what a bot does with users' voice and files: the
// transcription server, voice replies and the media limits.
func (c *Config) intakeProblems(l *problemList) {
	if b := c.LLM.Transcription.BaseURL; b != "" {
		if u, err := url.Parse(b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.add("llm.transcription.base_url", "must be an absolute http or https URL, or empty for llm.base_url", b)
		}
	}
	switch c.Voice.Replies {
	case VoiceNever, VoiceMirror, VoiceAlways:
	default:
		l.add("voice.replies", "must be never, mirror or always", c.Voice.Replies)
	}
	if b := c.Voice.BaseURL; b != "" {
		if u, err := url.Parse(b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.add("voice.base_url", "must be an absolute http or https URL, or empty for llm.base_url", b)
		}
	}
	if c.Voice.Replies != VoiceNever && (strings.TrimSpace(c.Voice.Model) == "" || strings.TrimSpace(c.Voice.Voice) == "") {
		l.add("voice.model", "voice replies need a speech model and a voice (voice.model, voice.voice)", c.Voice.Model)
	}
	atLeastOne(l.add, "voice.max_characters", c.Voice.MaxCharacters)
	if c.Media.MaxBytes < 1 {
		l.add("media.max_bytes", "must be at least 1B", c.Media.MaxBytes.String())
	}
	between(l.add, "media.max_image_px", c.Media.MaxImagePx, 64, 8192)
	between(l.add, "media.max_document_chars", c.Media.MaxDocumentChars, 0, 1<<20)
	between(l.add, "media.max_per_turn", c.Media.MaxPerTurn, 0, 100)
}

// mcpNameRE is what a server's name may hold: it is the prefix of its
// tools' names, which OpenAI limits to [a-zA-Z0-9_-].
var mcpNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// mcpProblems checks mcp.servers, in name order.
func (c *Config) mcpProblems(add addFunc) {
	names := make([]string, 0, len(c.MCP.Servers))
	for n := range c.MCP.Servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		s, key := c.MCP.Servers[n], "mcp.servers."+n
		switch {
		case !mcpNameRE.MatchString(n):
			add(key, "server name must be 1 to 32 letters, digits, \"-\" or \"_\" (it prefixes its tools' names)", n)
		case strings.Contains(n, "__"):
			add(key, `server name must not contain "__" (it separates server and tool in SERVER__TOOL)`, n)
		}
		switch {
		case s.Command == "" && s.URL == "":
			add(key, "needs command (a stdio server) or url (a streamable HTTP server)", nil)
		case s.Command != "" && s.URL != "":
			add(key+".url", "must not be set beside command: a server is either stdio (command) or HTTP (url)", s.URL)
		case s.URL != "":
			if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(key+".url", "must be an absolute http or https URL", s.URL)
			}
		}
		if s.Command == "" && (len(s.Args) > 0 || len(s.Env) > 0) {
			add(key+".args", "args and env are for a stdio server: set command", nil)
		}
		if s.URL == "" && len(s.Headers) > 0 {
			add(key+".headers", "headers are for an HTTP server: set url", nil)
		}
		for i, t := range s.Tools {
			if strings.TrimSpace(t) == "" {
				add(indexPath(key+".tools", i), "must not be empty", nil)
			}
		}
		notNegative(add, key+".timeout", s.Timeout)
		c.mcpTrustProblems(add, key, s)
	}
}

// mcpTrustProblems checks who a server's tools are offered to.
func (c *Config) mcpTrustProblems(add addFunc, key string, s MCPServer) {
	if s.OwnersOnly && len(c.Bot.Owners) == 0 {
		add(key+".owners_only", "offers the tools to bot.owners only, and bot.owners is empty: nobody would get them", true)
	}
	tools := make([]string, 0, len(s.Allow))
	for t := range s.Allow {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		if len(s.Tools) > 0 && !slices.Contains(s.Tools, t) {
			add(key+".allow."+t, "names a tool that tools: leaves out", t)
		}
		for i, u := range s.Allow[t] {
			switch {
			case u == "owners" && len(c.Bot.Owners) == 0:
				add(indexPath(key+".allow."+t, i), "names owners, and bot.owners is empty", u)
			case u != "owners" && !isUserID(u):
				add(indexPath(key+".allow."+t, i), `must be "owners" or look like "platform:user_id" (e.g. "telegram:12345")`, u)
			}
		}
	}
}

type addFunc func(key, msg string, got any)

// isUserID reports whether u is a user as bot.allow_users names one:
// "platform:user_id", without spaces.
func isUserID(u string) bool {
	platform, id, ok := strings.Cut(u, ":")
	return ok && platform != "" && id != "" && !strings.ContainsAny(u, " \t\r\n")
}

func positive(add addFunc, key string, d time.Duration) {
	if d <= 0 {
		add(key, "must be greater than 0", d)
	}
}

func notNegative(add addFunc, key string, d time.Duration) {
	if d < 0 {
		add(key, "must not be negative", d)
	}
}

// notNegativeCount is for counts where 0 means "no limit".
func notNegativeCount(add addFunc, key string, n int) {
	if n < 0 {
		add(key, "must not be negative (0: no limit)", n)
	}
}

func between(add addFunc, key string, n, lo, hi int) {
	if n < lo || n > hi {
		add(key, fmt.Sprintf("must be between %d and %d", lo, hi), n)
	}
}

func atLeastOne(add addFunc, key string, n int) {
	if n < 1 {
		add(key, "must be at least 1", n)
	}
}

// orList renders ["a","b","c"] as "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
