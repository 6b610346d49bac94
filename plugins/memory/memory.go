// Package memory is the bot's memory of each user: it cuts a
// conversation into session records (session_gap) and bounds what a turn
// sees of the current one (window_messages, window_tokens), and it writes
// the layers of the prompt stack that hold what the bot knows: the session
// metadata (L2), the user's facts (L3) and the summaries of recent
// sessions (L4), with the rules for remembering (L1). Every query is
// scoped to the turn's conversation, so one user's memory never reaches
// another's prompt.
package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "memory", New: func() core.Plugin { return New() }})
}

// Store is what the plugin reads of the store's own rows (session
// records, messages); store implements it. Its facts are its own
// (FactStore).
type Store interface {
	PreviousSessionRecord(ctx context.Context, conversationID int64, before time.Time) (core.SessionRecord, error)
	SessionRecordsSince(ctx context.Context, conversationID int64, since time.Time) ([]core.SessionRecord, error)
	SummarizedRecords(ctx context.Context, conversationID int64, before time.Time, limit int) ([]core.SessionRecord, error)
	RecordMessages(ctx context.Context, conversationID, recordID int64) (core.SessionRecord, []core.Message, error)
	SearchMessages(ctx context.Context, conversationID int64, keyword string, limit int) ([]core.Message, error)
}

// Plugin is the memory plugin; its exported fields are its config
// (plugins.memory).
type Plugin struct {
	// MaxFacts is how many facts are kept per user (default 30).
	MaxFacts int `yaml:"max_facts"`
	// SummariesInPrompt is how many earlier sessions' summaries L4 shows
	// (default 10).
	SummariesInPrompt int `yaml:"summaries_in_prompt"`
	// SessionGap starts a new session record after this long without a
	// message (default 10m).
	SessionGap time.Duration `yaml:"session_gap"`
	// WindowMessages bounds how many of the session's messages a turn
	// sees, newest kept (default 50).
	WindowMessages int `yaml:"window_messages"`
	// WindowTokens bounds the same messages by an estimate of their tokens
	// (default 8000).
	WindowTokens int `yaml:"window_tokens"`
	// FactEvery is how often conversations with new messages get a fact
	// pass (default 5m).
	FactEvery time.Duration `yaml:"fact_every"`
	// SummaryEvery is how often ended session records are looked for and
	// summarised (default 1m).
	SummaryEvery time.Duration `yaml:"summary_every"`
	// Embeddings turns on memory by meaning (model "": words only).
	Embeddings Embeddings `yaml:"embeddings"`
	// AutoRecall adds what is related to the user's new message to the
	// prompt (default on when embeddings are).
	AutoRecall *bool `yaml:"auto_recall"`

	store   Store
	facts   *FactStore
	engine  *engine
	meaning *meaning
	log     *slog.Logger
	// noPgvector keeps PostgreSQL's vectors searched by the plugin, for
	// tests of that path on a server with pgvector.
	noPgvector bool
}

// Interface guards.
var (
	_ core.Plugin            = (*Plugin)(nil)
	_ core.Provisioner       = (*Plugin)(nil)
	_ core.Validator         = (*Plugin)(nil)
	_ core.PromptContributor = (*Plugin)(nil)
	_ core.SessionPolicy     = (*Plugin)(nil)
	_ core.ToolProvider      = (*Plugin)(nil)
	_ core.Service           = (*Plugin)(nil)
	_ core.Migrator          = (*Plugin)(nil)
	_ core.FactOwner         = (*Plugin)(nil)
	_ core.TurnNoter         = (*Plugin)(nil)
)

// New returns the plugin with its defaults.
func New() *Plugin {
	return &Plugin{MaxFacts: 30, SummariesInPrompt: 10, SessionGap: core.DefaultSessionGap,
		WindowMessages: core.DefaultWindowMessages, WindowTokens: core.DefaultWindowTokens,
		FactEvery: 5 * time.Minute, SummaryEvery: time.Minute}
}

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "memory" }

// Provision takes the store and the database of its own tables.
func (p *Plugin) Provision(_ context.Context, env core.Env) error {
	st, ok := env.Store.(Store)
	if !ok {
		return fmt.Errorf("memory: the store (%T) cannot keep session records and facts", env.Store)
	}
	if env.Database == nil {
		return errors.New("memory: no database to keep facts in")
	}
	clock := env.Clock
	if clock == nil {
		clock = core.SystemClock{}
	}
	p.store, p.facts = st, NewFactStore(env.Database)
	p.facts.clock = clock
	log := env.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p.log = log.With("plugin", "memory")
	if es, ok := env.Store.(engineStore); ok && env.LLM != nil {
		p.engine = &engine{p: p, st: es, model: env.LLM, name: env.LightModel, clock: clock, log: p.log}
	}
	return p.provisionMeaning(env)
}

// Validate checks the limits.
func (p *Plugin) Validate() error {
	var errs []error
	if p.MaxFacts < 1 || p.MaxFacts > 200 {
		errs = append(errs, fmt.Errorf("memory: max_facts must be 1 to 200, got %d", p.MaxFacts))
	}
	if p.SummariesInPrompt < 0 || p.SummariesInPrompt > 100 {
		errs = append(errs, fmt.Errorf("memory: summaries_in_prompt must be 0 to 100, got %d", p.SummariesInPrompt))
	}
	if p.SessionGap < time.Minute {
		errs = append(errs, fmt.Errorf("memory: session_gap must be at least 1m, got %s", p.SessionGap))
	}
	if p.WindowMessages < 2 || p.WindowMessages > 1000 {
		errs = append(errs, fmt.Errorf("memory: window_messages must be 2 to 1000, got %d", p.WindowMessages))
	}
	if p.FactEvery < time.Second || p.SummaryEvery < time.Second {
		errs = append(errs, fmt.Errorf("memory: fact_every and summary_every must be at least 1s, got %s and %s", p.FactEvery, p.SummaryEvery))
	}
	if p.WindowTokens < 500 {
		errs = append(errs, fmt.Errorf("memory: window_tokens must be at least 500, got %d", p.WindowTokens))
	}
	return errors.Join(append(errs, p.validateEmbeddings())...)
}

// FactKeeper reads and erases the facts kept in db, for the console and
// the chat command /forget; it needs no provisioning.
func (p *Plugin) FactKeeper(db core.Database) core.FactKeeper { return NewFactStore(db) }

// SessionLimits reports the session gap and the window.
func (p *Plugin) SessionLimits() core.SessionLimits {
	return core.SessionLimits{Gap: p.SessionGap, WindowMessages: p.WindowMessages, WindowTokens: p.WindowTokens}
}

// PromptLayers writes L1 (how to remember), L2 (the session), L3 (facts)
// and L4 (summaries) for the turn's conversation.
func (p *Plugin) PromptLayers(ctx context.Context, t *core.Turn) ([]core.PromptLayer, error) {
	session, err := p.sessionLayer(ctx, t)
	if err != nil {
		return nil, err
	}
	facts, err := p.factsLayer(ctx, t)
	if err != nil {
		return nil, err
	}
	summaries, err := p.summariesLayer(ctx, t)
	if err != nil {
		return nil, err
	}
	return []core.PromptLayer{
		{Level: core.LayerInstructions, Name: "memory", Text: instructions},
		session, facts, summaries,
	}, nil
}
