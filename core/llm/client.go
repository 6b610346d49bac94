package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/parleybot/parley/core/llm/internal/output"
	"github.com/parleybot/parley/core/llm/internal/reqjson"
	"github.com/parleybot/parley/internal/httpclient"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultMaxToolRounds = 4
	DefaultMaxRetries    = 3
	DefaultMaxRetryDelay = 60 * time.Second
	DefaultRetryBase     = 500 * time.Millisecond
)

// Config configures a Client.
type Config struct {
	// BaseURL is the server's API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 (required, http or https).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" (optional: local
	// servers such as Ollama need none). It never appears in errors or logs.
	APIKey string
	// Model is the default model; a Request may override it.
	Model string
	// Timeout bounds each HTTP attempt, body included (default 60s).
	Timeout time.Duration
	// MaxToolRounds bounds tool rounds per Run when the request does not set
	// its own (default 4).
	MaxToolRounds int
	// MaxRetries is how many times a failed attempt is retried after the
	// first (default 3). Use NoRetries to disable retrying.
	MaxRetries int
	// MaxRetryDelay caps a single wait between attempts, Retry-After
	// included (default 60s).
	MaxRetryDelay time.Duration
	// RetryBase is the first backoff delay, doubled per retry, before
	// jitter (default 500ms).
	RetryBase time.Duration
	// HTTPClient sends the requests (default: a pooled client with dial,
	// TLS and idle timeouts and 100 idle connections per host). Its
	// Transport is wrapped with the retrying transport; the value passed
	// in is not modified.
	HTTPClient *http.Client
	// Logger receives retry warnings and tool panics (default slog.Default()).
	Logger *slog.Logger
	// Sleep waits between attempts and for the limits (a slot aside); it
	// must return early with ctx's error when ctx is done (default: a
	// timer). Tests inject it to observe delays.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now tells the time, to read Retry-After dates, pace requests and
	// stamp Health.Since (default time.Now).
	Now func() time.Time
	// MaxTokens bounds each completion (0: no bound is sent). It goes out
	// as max_tokens, which Ollama, vLLM, llama.cpp and LM Studio accept,
	// or as max_completion_tokens for api.openai.com and the models
	// go-openai treats as reasoning models (o1, o3, o4, gpt-5, its GPT-6
	// ids), which refuse max_tokens. A server that answers 400 saying the
	// field is unsupported gets the other one from then on.
	MaxTokens int
	// AuthHint ends the message of a 401 or 403 error, to tell the operator
	// where the key is configured, e.g. "check llm.api_key
	// (OPENAI_API_KEY)". It must not hold the key.
	AuthHint string
	// MaxConcurrency bounds the model requests in flight at once, retries
	// included, each held from its sending until its answer is read; the
	// others wait their turn (0: no limit).
	MaxConcurrency int
	// RequestsPerMinute paces the requests sent, every attempt counted as
	// providers count them, at an even rate with a burst of a second's
	// worth (0: no budget).
	RequestsPerMinute int
	// TokensPerMinute paces requests by their estimated tokens (prompt
	// bytes/4 plus max_tokens; an Embedder sharing the limits, its inputs'
	// bytes/4), corrected by the usage each answer reports;
	// a request larger than the whole budget waits for all of it (0: no
	// budget).
	TokensPerMinute int
	// ShareLimits, when set, is a Client whose limits (not this Config's)
	// this one keeps too: bots on one account. Freed slots go to the
	// waiting clients in turn (internal/fair).
	ShareLimits *Client
	// OnFinish, when set, is called once per chat completion response with
	// a choice (every round of Run, and Complete) with the model asked for
	// and the response's finish_reason ("unknown" when the server sent
	// none), e.g. to count finish reasons. It is called outside any lock
	// and must be cheap and safe for concurrent use.
	OnFinish func(model, reason string)
}

// openAIHost is OpenAI's API host, which is sent max_completion_tokens.
const openAIHost = "api.openai.com"

// IsOpenAI reports whether baseURL is OpenAI's own API (rather than a
// compatible server such as Ollama or vLLM).
func IsOpenAI(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && strings.EqualFold(u.Hostname(), openAIHost)
}

// NoRetries as Config.MaxRetries disables retrying.
const NoRetries = -1

// Client talks to one OpenAI-compatible server. It is safe for concurrent
// use.
type Client struct {
	conn

	// health is the state as of the last finished call; nil while unknown.
	health atomic.Pointer[Health]
	// completionTokens says the bound goes out as max_completion_tokens
	// rather than max_tokens, for a model the server has not refused a
	// field for: it is the host's default. flipped holds, by model, the
	// field a refusal switched that model to (true: max_completion_tokens),
	// for the client's lifetime: one server may host models of both kinds
	// (llm.model and llm.light_model, an OpenAI-compatible gateway).
	completionTokens bool
	flipped          sync.Map
	// shapes holds, by model, the rolesShape its chat template refused
	// less than (roles.go), for the client's lifetime.
	shapes sync.Map
}

// shapeFor is how strictly model's conversations alternate their roles.
func (c *Client) shapeFor(model string) rolesShape {
	if v, ok := c.shapes.Load(model); ok {
		return v.(rolesShape)
	}
	return shapeAsIs
}

// completionFor says whether model's bound goes out as
// max_completion_tokens.
func (c *Client) completionFor(model string) bool {
	if v, ok := c.flipped.Load(model); ok {
		return v.(bool)
	}
	return c.completionTokens
}

// conn is what a Client and a Transcriber share: the configuration with
// defaults applied, go-openai's client on the retrying transport, and the
// redactor that keeps the key out of errors and logs.
type conn struct {
	api    *openai.Client
	cfg    Config
	redact redactor
	log    *slog.Logger
	lim    *limits
	q      *queue // this client's turn and counts at lim
	// enc keeps what chat requests repeat (tools, plain messages)
	// encoded, for reqjson.Doer to splice into their bodies.
	enc *reqjson.Cache
}

// New validates cfg, applies defaults and builds a Client.
func New(cfg Config) (*Client, error) {
	lim, _ := cfg.ShareLimits.shared()
	cn, u, err := newConn(cfg, lim, nil)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: cn}
	// OpenAI's own API refuses max_tokens for its newer models and takes
	// max_completion_tokens for all of them.
	c.completionTokens = IsOpenAI(u.String())
	return c, nil
}

// newConn validates cfg, applies defaults and builds go-openai's client on
// a copy of cfg.HTTPClient whose transport retries and keeps to lim (nil:
// the limits of cfg). It returns the parsed base URL too.
func newConn(cfg Config, lim *limits, q *queue) (conn, *url.URL, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return conn{}, nil, fmt.Errorf("llm: base url %q must be an http or https url", u.Redacted())
	}
	if cfg.Timeout < 0 || cfg.MaxToolRounds < 0 || cfg.MaxRetryDelay < 0 || cfg.RetryBase < 0 || cfg.MaxTokens < 0 {
		return conn{}, nil, errors.New("llm: timeout, max tool rounds, retry delays and max tokens must not be negative")
	}
	if cfg.MaxConcurrency < 0 || cfg.RequestsPerMinute < 0 || cfg.TokensPerMinute < 0 {
		return conn{}, nil, errors.New("llm: max concurrency, requests per minute and tokens per minute must not be negative")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxToolRounds == 0 {
		cfg.MaxToolRounds = DefaultMaxToolRounds
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = DefaultMaxRetries
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.MaxRetryDelay == 0 {
		cfg.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}

	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	} else {
		hc = http.Client{Transport: defaultTransport()}
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if lim == nil {
		lim = newLimits(cfg)
	}
	if q == nil {
		q = &queue{}
	}
	cn := conn{cfg: cfg, redact: redactor(cfg.APIKey), log: cfg.Logger, lim: lim, q: q, enc: reqjson.New()}
	hc.Transport = &retryTransport{
		lim:        lim,
		q:          q,
		base:       base,
		timeout:    cfg.Timeout,
		maxRetries: cfg.MaxRetries,
		baseDelay:  cfg.RetryBase,
		maxDelay:   cfg.MaxRetryDelay,
		sleep:      cfg.Sleep,
		now:        cfg.Now,
		log:        cfg.Logger,
		redact:     cn.redact,
	}

	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = output.CapDoer{Next: streamDoer{next: reqjson.Doer{Next: &hc}}}
	cn.api = openai.NewClientWithConfig(oc)
	return cn, u, nil
}

// defaultTransport is the shared pooled transport (see internal/httpclient);
// the per-attempt timeout bounds each request. Over HTTP/1.1 every request
// in flight holds a connection with its buffers for the whole answer (2,000
// turns waiting on a local model: 2,000 connections), so they are small: a
// request body larger than the write buffer bypasses it anyway, and an
// answer is a few kilobytes read once.
func defaultTransport() *http.Transport {
	t := httpclient.Transport(0)
	t.WriteBufferSize = 1 << 10
	t.ReadBufferSize = 2 << 10
	return t
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
