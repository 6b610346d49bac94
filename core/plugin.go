package core

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/modeltext"
)

// Env is what the host gives a plugin or adapter when it is provisioned.
type Env struct {
	// BotID is the bot's id (config bots[].id; "default" for a config
	// without bots:). An adapter serves its webhooks at WebhookPath.
	BotID  string
	Logger *slog.Logger
	Clock  Clock
	// Location is the bot's default time zone (bot.timezone).
	Location *time.Location
	// BotName is the persona's name, for adapters that show one.
	BotName string
	// Store is the database (nil for adapters). A plugin that reads the
	// store's data asserts it to a small interface of its own, the
	// queries it needs.
	Store Store
	// Database runs the queries of a plugin's own tables (see Migrator);
	// nil for adapters.
	Database Database
	// LLM is the model for background work (summaries, fact extraction):
	// one call, no tools, on LightModel. Nil for adapters.
	LLM Completer
	// LightModel is llm.light_model (llm.model when that is empty).
	LightModel string
	// MaxPendingPerConversation is scheduler.max_pending_per_conversation:
	// how many scheduled messages a conversation may have waiting.
	MaxPendingPerConversation int
	// JobsChanged, when set, is called after a plugin creates a job, so
	// that the scheduler looks at once.
	JobsChanged func()
	// NewImageMaker builds a picture maker for model on the bot's model
	// server (llm.base_url, llm.api_key); nil for adapters.
	NewImageMaker func(model string) (ImageMaker, error)
	// NewEmbedder builds an embeddings client, on llm's server, key and limits where base and key are "".
	NewEmbedder func(model string, dimensions int, base, key string) (*llm.Embedder, error)
}

// WebhookPath is where bot botID serves a platform's webhook whose path
// is path ("/webhooks/telegram"): path itself for the default bot,
// "/webhooks/BOT/telegram" for another, so several bots share one
// server.
func WebhookPath(botID, path string) string {
	if botID == "" || botID == "default" {
		return path
	}
	return "/webhooks/" + botID + strings.TrimPrefix(path, "/webhooks")
}

// Completer asks the model once, without tools; *llm.Client implements it.
type Completer interface {
	Complete(ctx context.Context, req llm.Request) (llm.Result, error)
}

// Lifecycle, as in caddy: New() without side effects, strict decode of the
// module's YAML section into the value New returned, Provision, Validate,
// use, Cleanup (safe after a partial Provision).

// Provisioner is an optional capability: set up after config is decoded.
type Provisioner interface {
	Provision(ctx context.Context, env Env) error
}

// Validator is an optional capability: check the decoded, provisioned config.
type Validator interface {
	Validate() error
}

// Cleaner is an optional capability: release what Provision acquired.
type Cleaner interface {
	Cleanup() error
}

// Plugin is the one method every plugin has. Everything else is optional and
// found by type assertion.
type Plugin interface {
	Name() string
}

// PluginInfo registers a plugin module. New returns a fresh value with its
// defaults set; its exported yaml-tagged fields are its config.
type PluginInfo struct {
	Name string
	New  func() Plugin
	// OffByDefault leaves the plugin off when the config has no section
	// for it (images); any other is on unless its section says
	// enabled: false.
	OffByDefault bool
}

// AdapterInfo registers an adapter module. New returns a fresh adapter with
// its defaults set; its exported yaml-tagged fields are its config.
type AdapterInfo struct {
	Name string
	New  func() Adapter
	// EnabledByDefault enables the adapter when the config has no section
	// for it (the web chat); any other needs `enabled: true`.
	EnabledByDefault bool
}

// Prompt layer levels of the prompt stack (docs/contracts.md, "The
// prompt stack").
const (
	LayerPersona      = 0 // L0 persona
	LayerInstructions = 1 // L1 developer instructions
	LayerSession      = 2 // L2 session metadata
	LayerFacts        = 3 // L3 facts
	LayerSummaries    = 4 // L4 recent summaries
)

// PromptLayer is one block of the system prompt.
type PromptLayer struct {
	Level int
	// Name identifies the layer in the run record, e.g. "persona".
	Name string
	Text string
	// Order places the layer among the others of its level, lower first
	// (default 0; then in plugin name order).
	Order int
}

// Turn is what plugins see of the turn being executed.
type Turn struct {
	Conversation Conversation
	// PlatformTitle names the conversation's platform in a sentence
	// ("Telegram", "the web chat"), as its adapter gives it
	// (PlatformTitle). Empty in a Turn built by hand: a plugin then uses
	// Conversation.Platform.Title().
	PlatformTitle string
	Run           Run
	// History is L5: the session record's recent messages, oldest first,
	// within the window; it ends with the messages the run answers. It is
	// shared with later turns: read it, never modify it.
	History []Message
	// Now is the time the turn started.
	Now time.Time
	// Location is the user's time zone.
	Location *time.Location
	// Record is the session record the turn belongs to (ID 0 for a
	// conversation from before records were kept).
	Record SessionRecord
	// Job is the job the run executes (a proactive follow-up or a
	// recurring job), or nil.
	Job *Job
	// Cron is set on the turn of a recurring job's occurrence.
	Cron *CronTurn
	// Continuation is true while the turn says more after a reply that
	// asked to (WANT_MORE); output processors then honour no second one.
	Continuation bool
	// Question, set by tool offer_choices, is sent after the turn's
	// reply with its choices as buttons; a later call replaces it.
	Question *Question
	// React reacts with an emoji to the user's latest message (tool
	// react); nil when the platform has no reactions.
	React func(ctx context.Context, emoji string) error
	// Files go with the turn's reply (a picture of tool generate_image, an
	// MCP tool's image passed on by share_image), its text their caption.
	Files []OutboundFile
}

// PromptContributor is an optional plugin capability: add layers to the
// system prompt.
type PromptContributor interface {
	PromptLayers(ctx context.Context, t *Turn) ([]PromptLayer, error)
}

// ToolProvider is an optional plugin capability: offer tools to the model.
type ToolProvider interface {
	Tools(ctx context.Context, t *Turn) ([]llm.Tool, error)
}

// Reply is the model's output on its way to the user. Output processors may
// rewrite Text or set Silent so that nothing is sent.
type Reply struct {
	Text   string
	Silent bool
	// Continue asks for one more call of the model after this reply is
	// sent, to say more (ignored on a continuation).
	Continue bool
	// Proactive asks the bot to write to the user first, later. It is
	// kept only when a ProactivePolicy plugin is enabled.
	Proactive *ProactiveRequest
	// Notes say what a processor stripped or ignored, for the run record.
	Notes []string
	// Metadata is stored with the reply message.
	Metadata map[string]any
}

// ProactiveRequest is the model's wish to follow up after Delay.
type ProactiveRequest struct {
	Delay  time.Duration
	Reason string
}

// OutputProcessor is an optional plugin capability: read and rewrite the
// model's output before it is sent (control tokens).
type OutputProcessor interface {
	ProcessOutput(ctx context.Context, t *Turn, r *Reply) error
}

// Outcome is how a turn ended, for observers.
type Outcome struct {
	Status RunStatus
	Reply  *Message
	Err    error
	Usage  llm.Usage
}

// TurnObserver is an optional plugin capability: learn about a finished turn
// (persist mood, update facts). Observers run after the reply is sent.
type TurnObserver interface {
	TurnFinished(ctx context.Context, t *Turn, o Outcome)
}

// SessionLimits say how a conversation is cut into session records and
// how much of the current record a turn sees (layer L5).
type SessionLimits struct {
	// Gap starts a new record when the previous message is older (default 10m).
	Gap time.Duration
	// WindowMessages and WindowTokens bound L5; the oldest messages of the
	// record are dropped first (defaults 50 and 8000).
	WindowMessages int
	WindowTokens   int
}

// SessionPolicy is an optional plugin capability (the memory plugin): the
// session limits. Without one the defaults hold.
type SessionPolicy interface {
	SessionLimits() SessionLimits
}

// ProactivePolicy is an optional plugin capability (the proactive plugin).
// Without one, requests to follow up later are ignored.
type ProactivePolicy interface {
	// ProactiveDue returns when a follow-up due at due may run for the
	// user of conv, whose zone is loc: due itself, or a later time (the end
	// of the user's quiet hours).
	ProactiveDue(conv Conversation, loc *time.Location, due time.Time) time.Time
	// ProactiveNudge is the hidden instruction a follow-up turn ends with:
	// the reason it was planned for, and that it may stay silent.
	ProactiveNudge(t *Turn) string
}

// TurnNoter is an optional plugin capability: a short note that changes
// from turn to turn (the user's current local time, what memory recalls of
// the new message), put at the end of the system message. Unlike a layer it
// is not frozen with the record, and it is never stored. A note that cannot
// be made in time is left out ("").
type TurnNoter interface {
	TurnNote(ctx context.Context, t *Turn) string
}

// Service is an optional plugin capability: a background service that runs
// from Start until Stop.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Migration is one version of a plugin's own tables. The store runs a
// plugin's migrations after its own, each once, in a transaction with the
// row that records it (per plugin and version, apart from the store's
// schema_migrations). Never edit an applied migration: append one.
type Migration struct {
	Version int
	Name    string
	// Statements run on both dialects, in order. {{id}} (an id primary
	// key), {{bigint}} and {{time}} are the store's types in each.
	Statements []string
	// SQLite and Postgres are statements for one dialect only, run after
	// the shared ones.
	SQLite, Postgres []string
	// Columns are added to tables the plugin does not own, each only when
	// the table lacks it (SQLite has no ADD COLUMN IF NOT EXISTS).
	Columns []Column
}

// Column is a column a plugin adds to another's table.
type Column struct {
	Table, Name string
	// Definition is its type and constraints, e.g. "{{bigint}} NOT NULL DEFAULT 0".
	Definition string
}

// Migrator is an optional plugin capability: the plugin keeps tables of
// its own. Migrations is called on a plugin fresh from New (the schema
// does not depend on the config), oldest first.
type Migrator interface {
	Plugin
	Migrations() []Migration
}

// Database dialects.
const (
	DialectSQLite   = "sqlite"
	DialectPostgres = "postgres"
)

// Database is the store's database as a plugin sees it, for the queries
// of its own tables. Writes go through the store's write path: SQLite has
// one writer, and the store serialises (and batches) the writes.
type Database interface {
	// Dialect is DialectSQLite or DialectPostgres.
	Dialect() string
	// Read returns a handle for reads outside a transaction.
	Read(ctx context.Context) *gorm.DB
	// Write runs fn in a write transaction, perhaps shared with other
	// callers' writes. fn may run again after a rollback, so it must set
	// its results afresh. An error that says the database cannot take
	// writes wraps ErrStoreUnavailable.
	Write(ctx context.Context, fn func(tx *gorm.DB) error) error
	// Time binds a time as the store keeps times: UTC, to the microsecond.
	Time(t time.Time) any
	// ScanTime is a scan destination for a time column (NULL leaves t
	// zero).
	ScanTime(t *time.Time) any
}

// FactKeeper is the facts a plugin keeps about conversations' users
// (the memory plugin's), which the console shows and the chat command
// /forget lists and erases.
type FactKeeper interface {
	// Facts returns the conversation's facts by key.
	Facts(ctx context.Context, conversationID int64) ([]Fact, error)
	// ForgetAllFacts erases the conversation's facts and returns how many
	// there were.
	ForgetAllFacts(ctx context.Context, conversationID int64) (int, error)
}

// MoodKeeper is the mood history a plugin keeps (the mood plugin's),
// which the console charts.
type MoodKeeper interface {
	// MoodHistory returns up to limit of the conversation's newest mood
	// points, oldest first.
	MoodHistory(ctx context.Context, conversationID int64, limit int) ([]MoodPoint, error)
}

// FactOwner is an optional plugin capability: the plugin keeps facts in
// its tables, and FactKeeper reads them on db. Like Migrations, it is
// called on a plugin fresh from New, enabled or not: the facts of a
// plugin turned off can still be seen and erased.
type FactOwner interface {
	Plugin
	FactKeeper(db Database) FactKeeper
}

// MoodOwner is an optional plugin capability: the plugin keeps moods in
// its tables, and MoodKeeper reads them on db (on a plugin fresh from New,
// as FactOwner).
type MoodOwner interface {
	Plugin
	MoodKeeper(db Database) MoodKeeper
}

// MoodPoint is the bot's mood in a conversation at one moment: valence
// (unpleasant −1 … pleasant 1) and arousal (calm −1 … excited 1).
type MoodPoint struct {
	ID              int64
	ConversationID  int64
	SessionRecordID *int64
	Valence         float64
	Arousal         float64
	// Source says how the mood came to be: "initial" (decayed towards the
	// baseline at a record's start) or "set_mood" (the model changed it).
	Source    string
	Reason    string
	CreatedAt time.Time
}

// Fact is something the bot remembers about the user of one conversation.
type Fact struct {
	ID             int64
	ConversationID int64
	// Key is the fact's id as the model sees it ("F01").
	Key            string
	Content        string
	CreatedAt      time.Time
	LastAccessedAt time.Time
}

// WithoutReasoning wraps c so that what it returns has the model's
// reasoning taken out of Content (moved to Result.Reasoning): background
// work on a reasoning model (summaries, facts) must not keep its thinking
// as the result. The host gives plugins Env.LLM wrapped so.
func WithoutReasoning(c Completer) Completer { return reasoningFree{c} }

type reasoningFree struct{ c Completer }

func (r reasoningFree) Complete(ctx context.Context, req llm.Request) (llm.Result, error) {
	res, err := r.c.Complete(ctx, req)
	text, thought := modeltext.StripReasoning(res.Content)
	if thought != "" {
		res.Reasoning = strings.TrimSpace(strings.TrimSpace(res.Reasoning) + "\n\n" + thought)
	}
	res.Content = text
	return res, err
}
