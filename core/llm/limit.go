package llm

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/parleybot/parley/core/llm/internal/budget"
	"github.com/parleybot/parley/core/llm/internal/fair"
)

// limits is what every request of a Client (and of a Transcriber sharing
// it) shares of the model provider's limits: the slots for requests in
// flight, the per-minute budgets, and the pause a 429 imposes on all of
// them. Every HTTP attempt passes through acquire, retries included.
//
// The budgets are token buckets kept as the time each will be full again
// (as GCRA does): a request reserves its share at once and sleeps until
// its turn, so waiters go in the order they came, each sleeping once, and
// nothing polls.
type limits struct {
	slots *fair.Slots // nil: no limit on requests in flight
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	// pauseUntil ends the current 429 pause (Unix nanoseconds; 0: none).
	// It is read on every attempt, so without the lock.
	pauseUntil atomic.Int64

	mu       sync.Mutex
	requests *budget.Bucket // nil: no requests-per-minute budget
	tokens   *budget.Bucket // nil: no tokens-per-minute budget
}

// newLimits builds the limits of cfg, whose Now and Sleep are set.
func newLimits(cfg Config) *limits {
	l := &limits{now: cfg.Now, sleep: cfg.Sleep}
	if cfg.MaxConcurrency > 0 {
		l.slots = fair.New(cfg.MaxConcurrency)
	}
	if rpm := cfg.RequestsPerMinute; rpm > 0 {
		// A burst of one second's worth: providers enforce a per-minute
		// limit over shorter periods too (OpenAI: "60,000 requests/minute
		// may be enforced as 1,000 requests/second"), so a bucket holding
		// a whole minute would let hundreds of users who write at once
		// spend it in a burst that earns a 429. Requests are spread evenly
		// instead, at least one may always go.
		l.requests = &budget.Bucket{PerMinute: float64(rpm), Burst: float64(max(1, rpm/60))}
	}
	if tpm := cfg.TokensPerMinute; tpm > 0 {
		// A burst of the whole minute: one turn's request is often many
		// seconds' worth of tokens (4,000 of a 30,000 budget is 8 s), so a
		// smaller bucket would make most requests wait for it to fill,
		// one at a time. The provider counts tokens against the minute's
		// budget too, and the request budget above spreads the starts.
		l.tokens = &budget.Bucket{PerMinute: float64(tpm), Burst: float64(tpm)}
	}
	return l
}

// pacing is what a chat or embeddings request carries down to the
// transport: it is charged to the per-minute budgets, as estimated tokens.
// Transcriptions carry none: providers meter each model separately, and
// the budgets are the chat model's (embeddings are charged all the same:
// see EmbedderConfig).
type pacing struct {
	tokens int
}

type pacingKey struct{}

func withPacing(ctx context.Context, p *pacing) context.Context {
	return context.WithValue(ctx, pacingKey{}, p)
}

func pacingOf(ctx context.Context) *pacing {
	p, _ := ctx.Value(pacingKey{}).(*pacing)
	return p
}

// paced reports whether chat and embeddings requests are charged to any
// budget, so their tokens are estimated only when something will use the
// number.
func (l *limits) paced() bool { return l.requests != nil || l.tokens != nil }

// slot is one request in flight; release frees it, once however often it
// is called (a body may be closed twice).
type slot struct {
	l    *limits
	q    *queue
	done atomic.Bool
}

// queue is one client's place at limits it may share: its turn for the
// slots, and its requests in flight and waiting.
type queue struct {
	lane              fair.Lane
	inFlight, waiting atomic.Int64
}

func (s *slot) release() {
	if s.done.CompareAndSwap(false, true) {
		s.q.inFlight.Add(-1)
		if s.l.slots != nil {
			s.l.slots.Release()
		}
	}
}

// acquire waits until an attempt may go: for a slot (in q's turn),
// for the end of any 429 pause that ends after waited (the pause the
// caller already slept out, as Unix nanoseconds), and, for a chat request
// (p non-nil), for its turn in the per-minute budgets. The slot is taken
// first, so a request leaves the pacer at the moment it goes rather than
// queueing again for a slot. It returns ctx's error if ctx ends first.
func (l *limits) acquire(ctx context.Context, q *queue, p *pacing, waited int64) (*slot, error) {
	if l.slots != nil && !l.slots.TryAcquire() {
		q.waiting.Add(1)
		err := l.slots.Acquire(ctx, &q.lane)
		q.waiting.Add(-1)
		if err != nil {
			return nil, err
		}
	}
	if err := l.wait(ctx, q, p, waited); err != nil {
		if l.slots != nil {
			l.slots.Release()
		}
		return nil, err
	}
	q.inFlight.Add(1)
	return &slot{l: l, q: q}, nil
}

// wait waits out the pause, then the budgets, then any pause that began
// meanwhile: a request must not go while the server asks everyone to wait.
func (l *limits) wait(ctx context.Context, q *queue, p *pacing, waited int64) error {
	if err := l.waitPause(ctx, q, &waited); err != nil {
		return err
	}
	if p == nil || !l.paced() {
		return nil
	}
	if d := l.reserve(p.tokens); d > 0 {
		if err := q.sleep(ctx, l.sleep, d); err != nil {
			l.refund(p.tokens)
			return err
		}
	}
	return l.waitPause(ctx, q, &waited)
}

// waitPause sleeps until the pause ends, unless the caller already waited
// until then. It compares against the end it slept for, not against the
// clock, so that an injected Sleep that returns at once cannot spin.
func (l *limits) waitPause(ctx context.Context, q *queue, waited *int64) error {
	for {
		until := l.pauseUntil.Load()
		if until <= *waited {
			return nil
		}
		d := time.Duration(until - l.now().UnixNano())
		if d <= 0 {
			return nil
		}
		if err := q.sleep(ctx, l.sleep, d); err != nil {
			return err
		}
		*waited = until
	}
}

// sleep sleeps d, counted as one of q's requests waiting.
func (q *queue) sleep(ctx context.Context, sleep func(context.Context, time.Duration) error, d time.Duration) error {
	q.waiting.Add(1)
	defer q.waiting.Add(-1)
	return sleep(ctx, d)
}

// pause makes every request wait until until (a 429 said so). It reports
// whether no pause was in force at now, i.e. a new episode began, for the
// caller to log once per episode rather than once per request.
func (l *limits) pause(now, until time.Time) bool {
	n := until.UnixNano()
	for {
		old := l.pauseUntil.Load()
		if n <= old {
			return false
		}
		if l.pauseUntil.CompareAndSwap(old, n) {
			return old <= now.UnixNano()
		}
	}
}

// reserve charges one request of tokens to the budgets at the earliest
// time both allow it and returns how long to wait until then.
func (l *limits) reserve(tokens int) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	at := now
	if l.requests != nil {
		at = budget.Later(at, l.requests.Earliest(1))
	}
	if l.tokens != nil {
		at = budget.Later(at, l.tokens.Earliest(float64(tokens)))
	}
	if l.requests != nil {
		l.requests.Charge(at, 1)
	}
	if l.tokens != nil {
		l.tokens.Charge(at, float64(tokens))
	}
	return at.Sub(now)
}

// refund gives back what reserve charged for a request that did not go.
// Requests reserved after it keep their times: they wait no less than
// needed, and the budget it frees goes to whoever asks next.
func (l *limits) refund(tokens int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.requests != nil {
		l.requests.Charge(now, -1)
	}
	if l.tokens != nil {
		l.tokens.Charge(now, -float64(tokens))
	}
}

// settle corrects a request's token charge with the usage the server
// reported: what was estimated too much is given back, what was too little
// is taken (the budget may go into debt, which later requests wait out).
// Without usage (some servers send none) the estimate stands.
func (l *limits) settle(estimate int, u openai.Usage) {
	if l.tokens == nil {
		return
	}
	used := u.TotalTokens
	if used == 0 {
		used = u.PromptTokens + u.CompletionTokens
	}
	if used <= 0 || used == estimate {
		return
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens.Charge(now, float64(used-estimate))
}

// Token estimate of a chat request, the way OpenAI counts one against a
// tokens-per-minute limit before it runs: the prompt's characters over four
// plus max_tokens.
const (
	// bytesPerToken: about four bytes of English text to a token.
	bytesPerToken = 4
	// messageTokens is the overhead of each message (role and
	// separators) in OpenAI's token counting guide.
	messageTokens = 4
	// imageTokens is what an image part counts for: OpenAI charges a
	// high-detail image by 512px tiles, 85 + 170 a tile, 765 for a photo
	// scaled to 1024x768. Its data: URL's length says nothing about that.
	imageTokens = 765
)

// estimateTokens estimates a chat request's tokens, max_tokens included.
func estimateTokens(msgs []openai.ChatCompletionMessage, tools []openai.Tool, maxTokens int) int {
	n, images := 0, 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.Name) + len(m.ToolCallID)
		for _, p := range m.MultiContent {
			if p.Type == openai.ChatMessagePartTypeImageURL {
				images++
			} else {
				n += len(p.Text)
			}
		}
		for _, c := range m.ToolCalls {
			n += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	for _, t := range tools {
		if f := t.Function; f != nil {
			n += len(f.Name) + len(f.Description)
			if b, err := json.Marshal(f.Parameters); err == nil {
				n += len(b)
			}
		}
	}
	return (n+bytesPerToken-1)/bytesPerToken + messageTokens*len(msgs) + imageTokens*images + max(maxTokens, 0)
}

// InFlight is how many of the client's requests to the model server are in
// flight (sent, the answer not yet read), the transcriptions, speech,
// images and embeddings sharing its limits included.
func (c *Client) InFlight() int { return int(c.q.inFlight.Load()) }

// Waiting is how many of the client's requests wait to be sent: for a slot
// (Config.MaxConcurrency), for the per-minute budgets, or for the end of a
// 429 pause.
func (c *Client) Waiting() int { return int(c.q.waiting.Load()) }

// shared are c's limits and queue, for a client or service sharing them
// (nil c: none).
func (c *Client) shared() (*limits, *queue) {
	if c == nil {
		return nil, nil
	}
	return c.lim, c.q
}
