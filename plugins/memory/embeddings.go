package memory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/internal/vectors"
)

// Embeddings configures memory by meaning (plugins.memory.embeddings): the
// messages and session summaries are embedded in the background, and
// retrieve_history and recall find them by meaning as well as by words.
type Embeddings struct {
	// Model is the embedding model ("": words only, as without).
	Model string `yaml:"model"`
	// BaseURL and APIKey are the embeddings server's ("": llm's).
	BaseURL string        `yaml:"base_url"`
	APIKey  config.Secret `yaml:"api_key"`
	// Dimensions, when > 0, asks models that can shorten their vectors
	// for that many dimensions.
	Dimensions int `yaml:"dimensions"`
}

const (
	// embedEvery is how often the background pass looks for messages
	// to embed while there are none.
	embedEvery = 5 * time.Second
	// embedBatch bounds the texts of one embeddings request.
	embedBatch = 256
	// embedConversations bounds the conversations one round reads.
	embedConversations = 64
	// maxEmbedRunes bounds the text of one message embedded: its start
	// says what it is about, and models take a few thousand tokens.
	maxEmbedRunes = 4000
)

// embedder is what the plugin needs of an embeddings client
// (*llm.Embedder).
type embedder interface {
	Embed(ctx context.Context, inputs []string) ([][]float32, error)
}

// meaning is the plugin's memory by meaning; nil while embeddings are off.
type meaning struct {
	emb   embedder
	model string // the model and its dimensions, as the vectors are kept
	vs    *vectorStore
	cache *vectors.Cache[indexKey]
	// loads serialises loading an index, so two searches of one
	// conversation do not both read its vectors.
	loads chan struct{}
	// summariesFrom is the record id after which the summaries walk goes
	// on; -1 once every summary is embedded (new ones are as they come).
	summariesFrom int64
	// filled is true once every vector kept before pgvector was there
	// has its embedding column.
	filled bool
	// pgvectorWhy says why PostgreSQL's pgvector does not search.
	pgvectorWhy string
	// dims is the length of the vectors the pass keeps (0: none kept
	// since the start).
	dims int
}

// indexKey names a conversation's search index of one model.
type indexKey struct {
	conversationID int64
	model          string
}

// maxIndexBytes bounds the vectors kept in memory for search, over all
// conversations: 64 MiB is some 250,000 messages at 256 dimensions.
const maxIndexBytes = 64 << 20

// modelKey is how vectors of model at dims are labelled: a model asked
// for other dimensions makes vectors of another kind.
func modelKey(model string, dims int) string {
	if dims <= 0 {
		return model
	}
	return model + "@" + strconv.Itoa(dims)
}

// validateEmbeddings checks plugins.memory.embeddings.
func (p *Plugin) validateEmbeddings() error {
	e := p.Embeddings
	if e.Dimensions < 0 || e.Dimensions > 8192 {
		return fmt.Errorf("memory: embeddings.dimensions must be 0 (the model's own) to 8192, got %d", e.Dimensions)
	}
	if e.Model == "" && (e.BaseURL != "" || e.APIKey != "" || e.Dimensions != 0) {
		return errors.New("memory: embeddings.model is empty, so its base_url, api_key and dimensions do nothing: set a model (e.g. text-embedding-3-small) or remove them")
	}
	return nil
}

// provisionMeaning builds the embeddings client when a model is set.
func (p *Plugin) provisionMeaning(env core.Env) error {
	e := p.Embeddings
	if e.Model == "" {
		return nil
	}
	if env.NewEmbedder == nil {
		return errors.New("memory: embeddings need a model server, and this host gives none")
	}
	emb, err := env.NewEmbedder(e.Model, e.Dimensions, e.BaseURL, e.APIKey.Reveal())
	if err != nil {
		return err
	}
	p.meaning = &meaning{emb: emb, model: modelKey(e.Model, e.Dimensions),
		vs: &vectorStore{db: p.facts.db, bot: botOr(env.BotID)}, cache: vectors.NewCache[indexKey](maxIndexBytes),
		loads: make(chan struct{}, 1)}
	return nil
}

// botOr is the bot's id, "default" for a host that names none.
func botOr(id string) string {
	if id == "" {
		return "default"
	}
	return id
}

// autoRecall reports whether the turn's prompt gets what is related to
// the user's new message.
func (p *Plugin) autoRecall() bool {
	return p.meaning != nil && (p.AutoRecall == nil || *p.AutoRecall)
}

// startMeaning makes the configured model the bot's (another model's
// vectors go) and finds how vectors are searched.
func (p *Plugin) startMeaning(ctx context.Context, now time.Time) error {
	m := p.meaning
	if m == nil {
		return nil
	}
	changed, err := m.vs.useModel(ctx, m.model, now)
	if err != nil {
		return err
	}
	m.summariesFrom = 0
	var pv *pgvector
	why := "turned off"
	if !p.noPgvector {
		if pv, why, err = detectPgvector(ctx, m.vs.db); err != nil {
			return err
		}
	}
	m.vs.pv, m.pgvectorWhy = pv, why
	attrs := []any{"model", m.model, "auto_recall", p.autoRecall()}
	if changed {
		attrs = append(attrs, "backlog", "every conversation is embedded with this model, in the background")
	}
	switch {
	case pv != nil:
		p.log.Info("memory by meaning is on: messages are embedded in the background and searched by PostgreSQL's pgvector", attrs...)
	case m.vs.db.Dialect() == core.DialectPostgres:
		p.log.Info("memory by meaning is on: messages are embedded in the background and searched in this process, not by pgvector",
			append(attrs, "pgvector", why)...)
	default:
		p.log.Info("memory by meaning is on: messages are embedded in the background and searched in this process", attrs...)
	}
	return nil
}
