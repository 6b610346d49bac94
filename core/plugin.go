package core

import (
	"context"
	"log/slog"
	"time"

	"github.com/parleybot/parley/core/llm"
)

// Env is what the host gives a plugin or adapter when it is provisioned.
type Env struct {
	Logger *slog.Logger
	Clock  Clock
	// Location is the bot's default time zone (bot.timezone).
	Location *time.Location
	// BotName is the persona's name, for adapters that show one.
	BotName string
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
}

// AdapterInfo registers an adapter module. New returns a fresh adapter with
// its defaults set; its exported yaml-tagged fields are its config.
type AdapterInfo struct {
	Name string
	New  func() Adapter
}

// Prompt layer levels of the prompt stack (see DESIGN.md).
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
}

// Turn is what plugins see of the turn being executed.
type Turn struct {
	Conversation Conversation
	Run          Run
	// History is the conversation's recent messages, oldest first; it ends
	// with the messages the run answers. It is shared with later turns:
	// read it, never modify it.
	History []Message
	// Now is the time the turn started.
	Now time.Time
	// Location is the user's time zone.
	Location *time.Location
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
	// Metadata is stored with the reply message.
	Metadata map[string]any
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

// Service is an optional plugin capability: a background service that runs
// from Start until Stop.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}
