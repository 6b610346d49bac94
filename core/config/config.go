package config

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the whole parley configuration file. Every field's comment gives
// its default.
type Config struct {
	Store     Store              `yaml:"store"`
	LLM       LLM                `yaml:"llm"`
	Bot       Bot                `yaml:"bot"`
	Adapters  map[string]Section `yaml:"adapters"`
	Runs      Runs               `yaml:"runs"`
	Scheduler Scheduler          `yaml:"scheduler"`
	Media     Media              `yaml:"media"`
	Voice     Voice              `yaml:"voice"`
	MCP       MCP                `yaml:"mcp"`
	Commands  Commands           `yaml:"commands"`
	Console   Console            `yaml:"console"`
	HTTP      HTTP               `yaml:"http"`
	Log       Log                `yaml:"log"`
	Retention Retention          `yaml:"retention"`
	Plugins   map[string]Section `yaml:"plugins"`
	// Bots runs several bots in one process (default none: the top-level
	// sections are one bot, DefaultBotID). See BotConfig.
	Bots []BotConfig `yaml:"bots"`

	// File is the path the config was read from ("" for built-in defaults).
	File string `yaml:"-"`
	// Unset maps the key path of each value that named an unset
	// environment variable ("adapters.telegram.token") to the variable
	// ("TELEGRAM_BOT_TOKEN"), so that an error about the value can say
	// why it is empty. A variable with a default (${VAR:-x}) is not in it.
	Unset map[string]string `yaml:"-"`
	// BotID is the bot a Config from BotConfigs runs; "" in a file's own
	// Config.
	BotID string `yaml:"-"`
}

// Retention bounds how long the store keeps what users wrote.
type Retention struct {
	// Messages older than this are deleted in the background, a batch at
	// a time; session summaries and facts stay (default 0: keep all).
	Messages time.Duration `yaml:"messages"`
}

// Store selects the database.
type Store struct {
	// Driver is sqlite or postgres (default sqlite).
	Driver string `yaml:"driver"`
	// DSN is a file path for sqlite or a postgres:// URL (default parley.db).
	DSN Secret `yaml:"dsn"`
	// MaxFileBytes bounds the bytes of outbound files (voice notes,
	// pictures, documents) kept in the database until they are sent, so
	// that a send a crash cut is retried with the same bytes (default
	// 500MiB; 0 keeps none). Past it a file is sent without being kept.
	MaxFileBytes ByteSize `yaml:"max_file_bytes"`
	// Spool keeps, on local disk, the DMs of platforms that never deliver
	// a message again (Discord, the web chat) while the store cannot take
	// them.
	Spool Spool `yaml:"spool"`
}

// Spool configures the inbound spool.
type Spool struct {
	// Dir holds the spool file (default "": beside the SQLite database,
	// DSN + "-spool"; with PostgreSQL, parley-spool in the working
	// directory).
	Dir string `yaml:"dir"`
	// MaxSize bounds the file; past it new messages are refused, loudly
	// (the web chat answers 503), while those taken are kept (default
	// 64MiB).
	MaxSize ByteSize `yaml:"max_size"`
}

// LLM configures the OpenAI-compatible model server.
type LLM struct {
	// BaseURL of the server (default https://api.openai.com/v1).
	BaseURL string `yaml:"base_url"`
	// APIKey (default ${OPENAI_API_KEY}).
	APIKey Secret `yaml:"api_key"`
	// Model for turns (default gpt-4o-mini).
	Model string `yaml:"model"`
	// LightModel for summaries and fact extraction (default: Model).
	LightModel string `yaml:"light_model"`
	// Timeout per request (default 60s).
	Timeout time.Duration `yaml:"timeout"`
	// MaxToolRounds bounds tool-call rounds per turn (default 4).
	MaxToolRounds int `yaml:"max_tool_rounds"`
	// MaxRetries bounds retries on 429 and 5xx (default 3).
	MaxRetries int `yaml:"max_retries"`
	// MaxTokens bounds each completion (default 2048); it is sent as
	// max_tokens, or max_completion_tokens where the server wants that.
	MaxTokens int `yaml:"max_tokens"`
	// MaxConcurrency bounds the model requests in flight at once, retries
	// and transcriptions included (default 256; 0: no limit).
	MaxConcurrency int `yaml:"max_concurrency"`
	// RequestsPerMinute paces model requests to the provider's limit
	// (default 0: unlimited).
	RequestsPerMinute int `yaml:"requests_per_minute"`
	// TokensPerMinute paces model requests by their estimated tokens
	// (default 0: unlimited).
	TokensPerMinute int `yaml:"tokens_per_minute"`
	// Vision sends the images users send to the model as image parts
	// (default true); off, the model is told an image came that it cannot
	// see.
	Vision bool `yaml:"vision"`
	// Transcription turns voice notes and audio into text.
	Transcription Transcription `yaml:"transcription"`
}

// Transcription is the OpenAI-compatible speech-to-text service
// (POST {base_url}/audio/transcriptions).
type Transcription struct {
	// Model (default whisper-1); "" turns transcription off.
	Model string `yaml:"model"`
	// BaseURL (default "": llm.base_url).
	BaseURL string `yaml:"base_url"`
	// APIKey (default "": llm.api_key).
	APIKey Secret `yaml:"api_key"`
}

// Voice is how the bot answers by voice: the reply's text goes to an
// OpenAI-compatible speech service (POST {base_url}/audio/speech, Ogg
// Opus) and out as a voice note; the text is what is stored.
type Voice struct {
	// Replies is never, mirror (a voice note is answered by voice) or
	// always (default never).
	Replies string `yaml:"replies"`
	// Model is the speech model (default tts-1).
	Model string `yaml:"model"`
	// Voice is the speech service's voice (default alloy).
	Voice string `yaml:"voice"`
	// BaseURL (default "": llm.base_url).
	BaseURL string `yaml:"base_url"`
	// APIKey (default "": llm.api_key).
	APIKey Secret `yaml:"api_key"`
	// MaxCharacters: a longer reply goes as text (default 1000).
	MaxCharacters int `yaml:"max_characters"`
}

// Voice reply modes (voice.replies).
const (
	VoiceNever  = "never"
	VoiceMirror = "mirror"
	VoiceAlways = "always"
)

// Media bounds what is done with the files users send.
type Media struct {
	// MaxBytes: larger attachments are described, not fetched (default 20MiB).
	MaxBytes ByteSize `yaml:"max_bytes"`
	// MaxImagePx is the longest side of an image sent to the model
	// (default 1568).
	MaxImagePx int `yaml:"max_image_px"`
	// MaxDocumentChars is how much of a document's text the model reads
	// (default 20000).
	MaxDocumentChars int `yaml:"max_document_chars"`
	// MaxPerTurn is how many attachments one turn opens; the rest are
	// described (default 10).
	MaxPerTurn int `yaml:"max_per_turn"`
}

// MCP configures the Model Context Protocol servers whose tools the model
// is offered, as SERVER__TOOL.
type MCP struct {
	// Servers by name (letters, digits, "-" and "_"; no "__").
	Servers map[string]MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server: a command run over stdio, or a URL spoken
// to over streamable HTTP (with the SSE transport as fallback).
type MCPServer struct {
	// Command and Args start a stdio server; Env is added to its
	// environment (values are secrets: never logged).
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]Secret `yaml:"env"`
	// URL of a streamable HTTP server; Headers go with every request
	// (values are secrets: never logged).
	URL     string            `yaml:"url"`
	Headers map[string]Secret `yaml:"headers"`
	// Tools is an allow-list of the server's tool names (empty: all).
	Tools []string `yaml:"tools"`
	// OwnersOnly offers the server's tools to bot.owners only: in anyone
	// else's conversation they are not offered at all.
	OwnersOnly bool `yaml:"owners_only"`
	// Allow names, per tool of the server, who it is offered to:
	// "owners" and users ("platform:user_id"); a tool not named is
	// offered to everyone (or owners only, with OwnersOnly).
	Allow map[string][]string `yaml:"allow"`
	// Timeout bounds one tool call (default, and 0: DefaultMCPTimeout).
	Timeout time.Duration `yaml:"timeout"`
	// Enabled (default true).
	Enabled *bool `yaml:"enabled"`
}

// DefaultMCPTimeout bounds an MCP tool call whose server sets no timeout.
const DefaultMCPTimeout = 30 * time.Second

// CallTimeout is Timeout, or DefaultMCPTimeout when it is 0.
func (s MCPServer) CallTimeout() time.Duration {
	if s.Timeout == 0 {
		return DefaultMCPTimeout
	}
	return s.Timeout
}

// IsEnabled reports whether the server is enabled (the default).
func (s MCPServer) IsEnabled() bool { return s.Enabled == nil || *s.Enabled }

// Commands configures the chat commands (/help, /new, /reminders, ...),
// answered without the model.
type Commands struct {
	// Enabled (default true); off, "/word" is text for the model.
	Enabled bool `yaml:"enabled"`
}

// Console configures the web console (/console/).
type Console struct {
	// Prices per model name, for the estimated cost of the tokens used
	// (default none: no cost is shown).
	Prices map[string]Price `yaml:"prices"`
}

// Price is what a model's tokens cost, per million, in the owner's
// currency.
type Price struct {
	Prompt     float64 `yaml:"prompt"`
	Completion float64 `yaml:"completion"`
}

// Bot configures who the bot talks to and how it fails.
type Bot struct {
	// Timezone is the default IANA zone for users whose zone is unknown (default UTC).
	Timezone string `yaml:"timezone"`
	// AllowUsers lists "platform:user_id" entries; empty allows everyone.
	AllowUsers []string `yaml:"allow_users"`
	// Owners lists the "platform:user_id" of the bot's owners: always let
	// in, the only ones offered owners_only tools and owners' commands
	// (/approve).
	Owners []string `yaml:"owners"`
	// DMPolicy is who may start a conversation: open (everyone, or only
	// allow_users when it lists some; the default), allowlist (allow_users
	// and owners only) or pairing (those, and users an owner approved
	// after they sent the code the bot gave them).
	DMPolicy string `yaml:"dm_policy"`
	// FailureMessage is sent when the model cannot answer (default
	// "Sorry, I can't answer right now. Please try again in a little while.").
	FailureMessage string `yaml:"failure_message"`
	// BusyMessage is sent, under runs.during_generation: reject, to a user
	// who writes while their last message is being answered (default
	// "I'm still answering your last message. One moment, please.").
	BusyMessage string `yaml:"busy_message"`
	// AckReaction is the emoji the bot reacts with to the user's latest
	// message while a turn works on it, taken back once the reply is out,
	// where the platform has reactions (default "": none).
	AckReaction string `yaml:"ack_reaction"`
	// Limits bound what one user may cost (default: none).
	Limits Limits `yaml:"limits"`
	// Streaming shows a reply growing while the model writes it.
	Streaming Streaming `yaml:"streaming"`
	// PromiseCheck gives a reply that promises a later message ("I'll
	// check in tomorrow") in a turn that scheduled nothing one more round
	// to schedule it or reword the reply (default true).
	PromiseCheck bool `yaml:"promise_check"`
}

// Streaming is bot.streaming: replies grow where the user reads them (a
// Telegram draft, an edited Discord or Slack message, the web chat's event
// stream) while the model writes them. Each adapter may turn it off or
// pick edits (adapters.<name>.streaming).
type Streaming struct {
	// Enabled streams replies on every adapter that can (default true).
	Enabled bool `yaml:"enabled"`
	// Interval is the least time between two updates of one reply
	// (default 400ms); a platform's own limit is never undercut.
	Interval time.Duration `yaml:"interval"`
}

// Limits are the per-user limits (bot.limits): a message over one is
// stored but starts no turn and no model call, and the user is told once
// per window. Chat commands do not count and are never limited.
type Limits struct {
	// MessagesPerMinute bounds the messages a user sends in any 60 s
	// (default 0: no limit).
	MessagesPerMinute int `yaml:"messages_per_minute"`
	// TurnsPerDay bounds the turns answering a user that start in any
	// 24 h (default 0: no limit).
	TurnsPerDay int `yaml:"turns_per_day"`
	// TokensPerDay bounds the model tokens a user's conversation uses in
	// any 24 h (default 0: no limit).
	TokensPerDay int `yaml:"tokens_per_day"`
	// Exempt lists users no limit applies to, as in allow_users
	// ("platform:user_id"; default none).
	Exempt []string `yaml:"exempt"`
}

// Runs configures the per-conversation run queue.
type Runs struct {
	// Debounce delays a turn after a user message (default 1500ms).
	Debounce time.Duration `yaml:"debounce"`
	// DuringGeneration is reject, queue or restart (default queue).
	DuringGeneration string `yaml:"during_generation"`
	// StaleAfter fails a running run with no heartbeat for this long (default 2m).
	StaleAfter time.Duration `yaml:"stale_after"`
	// Workers is refused: it bounded turns like CPU work, but a turn waits
	// on the model nearly all its time. Model requests in flight are
	// bounded by llm.max_concurrency. A pointer tells "set" from "unset".
	Workers *int `yaml:"workers"`
	// TurnTimeout bounds one turn end to end: model calls, tools, sending
	// (default 5m; longer than llm.timeout).
	TurnTimeout time.Duration `yaml:"turn_timeout"`
}

// Scheduler configures the job engine.
type Scheduler struct {
	// MaxAttempts per job before it is marked failed (default 3).
	MaxAttempts int `yaml:"max_attempts"`
	// LateGrace: a job later than this after downtime is not sent (default 24h).
	LateGrace time.Duration `yaml:"late_grace"`
	// MaxPendingPerConversation caps pending jobs (default 50).
	MaxPendingPerConversation int `yaml:"max_pending_per_conversation"`
	// JobLease is how long a claimed job belongs to the process that
	// claimed it; a process that died leaves it to another after this
	// (default 1m; at most half of Discord's nonce memory, 2m, so that
	// Discord drops a message sent again after a crash).
	JobLease time.Duration `yaml:"job_lease"`
	// MaxSendsInDoubt is how many scheduled sends to one platform that
	// cannot drop a repeat (Telegram, Slack, web) a process has in flight
	// at once; each would be sent again, a duplicate, should the process
	// die before recording it (default 4: at a 100 ms round trip, enough
	// for Telegram's 30 messages/s; a crash duplicates at most 4).
	// Discord's nonce drops repeats, so its sends are not bounded by it.
	MaxSendsInDoubt int `yaml:"max_sends_in_doubt"`
}

// HTTP configures Parley's HTTP server.
type HTTP struct {
	// Listen address (default 127.0.0.1:8080).
	Listen string `yaml:"listen"`
	// APIToken guards /api/ and the console (default ${PARLEY_API_TOKEN});
	// empty disables both. At least MinAPITokenChars characters.
	APIToken Secret `yaml:"api_token"`
	// Public says that a Listen reachable from other machines (0.0.0.0,
	// ::, a non-loopback address) is meant (default false). Without it
	// such a Listen is refused while the web chat is enabled (anyone who
	// reaches it can talk to the model at the owner's cost), and warned
	// about when the console or the API is served.
	Public bool `yaml:"public"`
	// TrustedProxies are the reverse proxies (CIDRs or addresses) whose
	// X-Forwarded-For names the client: a request from one of them is
	// charged to the nearest address in that header that is not itself
	// trusted (default none: the connection's peer is the client).
	TrustedProxies []string `yaml:"trusted_proxies"`
	// MaxConnections caps open connections (default 2048); past it a new
	// connection takes the place of the longest-idle one, or is closed
	// at once.
	MaxConnections int `yaml:"max_connections"`
	// MaxConnectionsPerIP is each address's share of MaxConnections
	// (default 64; 0: no share): past it, an address's new connection
	// takes the place of its own idle, silent or slow one, or is closed.
	// The address is the connection's peer (an IPv6 /64); a trusted
	// proxy's connections carry many clients and have no share, so the
	// proxy must bound each client's connections.
	MaxConnectionsPerIP int `yaml:"max_connections_per_ip"`
	// ReadTimeout is how long a request's body may take to arrive after
	// its headers (default 30s); streams that only write are not cut.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// MinBodyRate is the least rate, per second, a request's body must
	// arrive at (default 1KiB): a body of known length has 5 s plus its
	// length at this rate (if less than ReadTimeout), and at a cap a body
	// that falls behind it after a second gives its connection's place
	// to a new one.
	MinBodyRate ByteSize `yaml:"min_body_rate"`
}

// MinAPITokenChars is the shortest http.api_token accepted: one guessed
// at the back-off's pace must stay out of reach.
const MinAPITokenChars = 16

// Log configures logging.
type Log struct {
	// Format is text or json (default text).
	Format string `yaml:"format"`
	// Level is debug, info, warn or error (default info).
	Level string `yaml:"level"`
}

// Section is one adapter's or plugin's YAML section, kept undecoded so that
// the module can decode it strictly into its own struct.
type Section struct {
	// Enabled is the section's "enabled" key (default true: writing a
	// section means you want it).
	Enabled bool
	// Node is the section's mapping node, without the "enabled" key.
	Node *yaml.Node
	// File, Line and Path locate the section in errors ("plugins.persona");
	// Line is the line of the section's key.
	File string
	Line int
	Path string
}
