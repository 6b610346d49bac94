package llm

import (
	"context"
	"errors"
	"fmt"

	openai "github.com/sashabaranov/go-openai"

	"github.com/parleybot/parley/core/llm/internal/output"
)

// EmbedderConfig configures an Embedder: ServiceConfig's fields (Model is the embedding model) and Dimensions.
//
// ShareLimits, unlike a Transcriber's, also charges the embeddings to the
// client's per-minute budgets: each request takes a slot of its
// MaxConcurrency, waits out the pause a 429 imposes (and, given one,
// imposes it), and is charged one request to RequestsPerMinute and its
// inputs' estimated tokens (bytes/4) to TokensPerMinute, corrected by the
// usage the server reports. Providers meter an embedding model apart from
// the chat model, but the product spec paces embeddings by
// tokens_per_minute too, so they are charged.
type EmbedderConfig struct {
	ServiceConfig
	// Dimensions, when > 0, is sent as `dimensions` (models that can shorten their vectors) and every vector must have that length.
	Dimensions int
}

// Embedder turns texts into vectors through an OpenAI-compatible
// POST {base}/embeddings. It shares the Client's retrying transport and
// error handling. It is safe for concurrent use.
type Embedder struct {
	conn
	dims int
}

// opEmbeddings names the call in error messages.
const opEmbeddings = "embeddings"

// maxEmbedBatch is the most inputs one request carries: OpenAI takes up to
// 2,048, but a smaller request is retried at a smaller cost, keeps within
// the servers that take fewer, and paces more evenly.
const maxEmbedBatch = 256

// NewEmbedder validates cfg, applies defaults and builds an Embedder.
func NewEmbedder(cfg EmbedderConfig) (*Embedder, error) {
	if cfg.Dimensions < 0 {
		return nil, errors.New("llm: embeddings: dimensions must not be negative")
	}
	cn, err := serviceConn(opEmbeddings, cfg.ServiceConfig)
	if err != nil {
		return nil, err
	}
	return &Embedder{conn: cn, dims: cfg.Dimensions}, nil
}

// Model is the embedding model the vectors come from: vectors of two
// models are not comparable.
func (e *Embedder) Model() string { return e.cfg.Model }

// Dimensions is the length asked of every vector (0: the model's own).
func (e *Embedder) Dimensions() int { return e.dims }

// Embed returns one vector per input, in the inputs' order.
//
// More than 256 inputs go in several requests, one after another. No
// inputs is nil and no error; an empty input is an error, as servers
// refuse one. The answer is checked: one vector per input, all of one
// non-zero length, Dimensions when set; a wrong answer is an *Error, as are
// the failures the Client reports (retried on 429 and 5xx alike, never
// showing the key).
func (e *Embedder) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	for i, s := range inputs {
		if s == "" {
			return nil, &Error{Message: fmt.Sprintf("llm: embeddings: input %d is empty", i)}
		}
	}
	out := make([][]float32, 0, len(inputs))
	dims := e.dims
	for first := 0; first < len(inputs); first += maxEmbedBatch {
		vecs, err := e.embed(ctx, inputs[first:min(first+maxEmbedBatch, len(inputs))], first, dims)
		if err != nil {
			return nil, err
		}
		// Every later batch must match the first's length.
		dims = len(vecs[0])
		out = append(out, vecs...)
	}
	return out, nil
}

// embed sends one request for batch, the caller's inputs from first on,
// and checks that its vectors have dims dimensions (0: any one length).
func (e *Embedder) embed(ctx context.Context, batch []string, first, dims int) ([][]float32, error) {
	// As for a chat request (Client.send): the transport charges every
	// attempt, the answer's usage corrects the estimate.
	var pace *pacing
	if e.lim.paced() {
		pace = &pacing{}
		if e.lim.tokens != nil {
			pace.tokens = estimateInputTokens(batch)
		}
		ctx = withPacing(ctx, pace)
	}
	actx, attempts := withAttempts(ctx)
	resp, err := e.api.CreateEmbeddings(actx, openai.EmbeddingRequestStrings{
		Input:          batch,
		Model:          openai.EmbeddingModel(e.cfg.Model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
		Dimensions:     e.dims,
	})
	var vecs [][]float32
	if err == nil {
		if pace != nil {
			e.lim.settle(pace.tokens, resp.Usage)
		}
		vecs, err = output.Vectors(resp.Data, first, len(batch), dims)
	}
	if err != nil {
		return nil, e.failAs(ctx, opEmbeddings, err, int(attempts.Load()))
	}
	return vecs, nil
}

// estimateInputTokens estimates the tokens of inputs as a chat prompt's
// are (estimateTokens): a token for every four bytes, each input rounded
// up.
func estimateInputTokens(inputs []string) int {
	n := 0
	for _, s := range inputs {
		n += (len(s) + bytesPerToken - 1) / bytesPerToken
	}
	return n
}
