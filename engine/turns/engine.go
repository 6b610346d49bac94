// Package turns is the engine that answers: it claims due runs, builds
// each turn's prompt (the plugins' stack, the history window, the user's
// files), calls the model with the plugins' tools, reads the answer's
// control tokens, delivers the reply through the Outbox and records the
// run's outcome. It also keeps its runs alive (heartbeats) and fails the
// ones whose process died (the reaper).
package turns

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/history"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/engine/promises"
	"github.com/parleybot/parley/engine/typing"
	"github.com/parleybot/parley/internal/loop"
)

// Store is what turns read and write; core.Store documents each method.
type Store interface {
	ClaimRuns(ctx context.Context, owner string, now time.Time, limit int, platforms ...core.Platform) ([]*core.Run, error)
	NextRunAfter(ctx context.Context, platforms ...core.Platform) (*time.Time, error)
	HeartbeatRuns(ctx context.Context, owner string, now time.Time, runIDs []int64) (stop []int64, err error)
	CompleteRun(ctx context.Context, runID int64, owner string, c core.RunCompletion) error
	CompleteRunAndClaim(ctx context.Context, runID int64, owner string, c core.RunCompletion, platforms ...core.Platform) (*core.Run, error)
	ReapStaleRuns(ctx context.Context, now, before time.Time) (reaped, retried int, err error)
	NoteGrown(ctx context.Context, runID int64, owner string, grown []string) error

	Conversation(ctx context.Context, id int64) (core.Conversation, error)
	MessagesAfter(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error)
	SettleDelivery(ctx context.Context, m core.Message) error
	PendingDeliveries(ctx context.Context, conversationID, exceptRun int64) ([]core.Message, error)
	SessionRecord(ctx context.Context, id int64) (core.SessionRecord, error)
	FreezePrompt(ctx context.Context, recordID int64, prompt string) (string, error)

	Job(ctx context.Context, id int64) (core.Job, error)
	AppendTrigger(ctx context.Context, m *core.Message, gap time.Duration) (core.Conversation, error)
}

// Limits is what a turn asks of the per-user limits (bot.limits), which
// the intake engine keeps.
type Limits interface {
	// LimitReached names the limit conv's user has reached, "" when none.
	LimitReached(ctx context.Context, conv core.Conversation, now time.Time) (string, error)
	// TellLimit tells conv's user, once, that limit stops their turns.
	TellLimit(ctx context.Context, conv core.Conversation, limit string, now time.Time)
}

// Config wires the engine; the composer (package engine) fills in every
// default.
type Config struct {
	Store   Store
	LLM     core.LLM
	Plugins []core.Plugin
	Outbox  *outbox.Outbox
	History *history.Cache
	// Limits, nil when no limit is set.
	Limits   Limits
	Logger   *slog.Logger
	Clock    core.Clock
	Owner    string
	Location *time.Location
	Metrics  core.Metrics
	// Session is the session policy (gap, window); Proactive the
	// follow-up policy, nil when none.
	Session   core.SessionLimits
	Proactive core.ProactivePolicy
	// Wake wakes the claim loop (a run was queued); JobWake the job loop
	// (a run's completion created a job).
	Wake    *core.Waker
	JobWake *core.Waker

	FailureMessage string
	// AckReaction is bot.ack_reaction: the emoji put on the user's message
	// while a turn works on it, "" for none.
	AckReaction       string
	ContinueNudge     string
	MaxToolRounds     int
	MaxTurns          int
	RecordCacheSize   int
	JobMaxAttempts    int
	StaleAfter        time.Duration
	HeartbeatInterval time.Duration
	ReapInterval      time.Duration
	TurnTimeout       time.Duration
	PollInterval      time.Duration
	TypingInterval    time.Duration
	LateGrace         time.Duration
	Media             core.MediaConfig
	Voice             core.VoiceReplies
	// Promises checks replies for promises made without scheduling
	// (bot.promise_check); nil: off.
	Promises *promises.Checker
}

// Engine runs turns; see the package doc. It owns the claim loop, the
// run's life (execute, complete) and the maintenance loop; the speaker
// makes each turn with the prompter and the courier.
type Engine struct {
	cfg       *Config
	log       *slog.Logger
	platforms []core.Platform
	speaker   *speaker
	courier   *courier

	// slots bound the turns in flight (MaxTurns): the claim loop and
	// intake's handoff (handoff.go) each take one per turn.
	slots chan struct{}

	mu       sync.Mutex
	started  bool
	stopping bool
	// inflight cancels the turns this process executes, by run id.
	inflight map[int64]context.CancelCauseFunc
	// claim and maint are the claim loop and the maintenance loop; they
	// sleep without a goroutine (internal/loop).
	claim, maint       *loop.Loop
	nextBeat, nextReap time.Time // the maintenance loop's
	turns              sync.WaitGroup
}

// New returns an engine over cfg.
func New(cfg Config) *Engine {
	c := &cfg
	e := &Engine{cfg: c, log: c.Logger, platforms: c.Outbox.Platforms(), courier: newCourier(c),
		inflight: map[int64]context.CancelCauseFunc{}, slots: make(chan struct{}, max(c.MaxTurns, 1))}
	e.speaker = &speaker{cfg: c, log: c.Logger, prompts: newPrompter(c), courier: e.courier, busy: &e.turns,
		typing: typing.Indicator{Clock: c.Clock, Every: c.TypingInterval, Busy: &e.turns, Log: c.Logger}}
	return e
}

// Start fails the runs a stopped process left, then runs the claim loop
// and the maintenance loop until runCtx ends.
func (e *Engine) Start(ctx, runCtx context.Context) error {
	now := e.cfg.Clock.Now()
	if n, retried, err := e.cfg.Store.ReapStaleRuns(ctx, now.UTC(), now.Add(-e.cfg.StaleAfter)); err != nil {
		return fmt.Errorf("reaping stale runs: %w", err)
	} else if n > 0 {
		e.log.Warn("failed runs left running by a stopped worker", "count", n, "user_turns_queued_again", retried)
	}
	e.reapPredecessors(ctx)
	e.mu.Lock()
	e.speaker.runCtx = runCtx
	e.started = true
	e.mu.Unlock()
	e.nextBeat, e.nextReap = now.Add(e.cfg.HeartbeatInterval), now.Add(e.cfg.ReapInterval)
	e.claim = loop.Start(runCtx, e.cfg.Clock, e.cfg.Wake, e.claimStep)
	e.maint = loop.Start(runCtx, e.cfg.Clock, nil, e.maintainStep)
	return nil
}

// Drain stops claiming runs and waits for the claim loop and the turns in
// flight to end; done is closed then.
func (e *Engine) Drain() (done <-chan struct{}) {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
	ch := make(chan struct{})
	go func() {
		if e.claim != nil {
			e.claim.Stop()
			<-e.claim.Done()
		}
		e.turns.Wait()
		close(ch)
	}()
	return ch
}

// Stopped waits for the maintenance loop, once ctx of Start is done.
func (e *Engine) Stopped() { <-e.maint.Done() }

// UseLimits makes turns of users over a per-user limit end before the
// model is called (the limits are intake's).
func (e *Engine) UseLimits(l Limits) { e.cfg.Limits = l }

// StopRun cancels a run this process is executing, if it is; it reports
// whether it was (the restart policy: a newer message stops the turn).
func (e *Engine) StopRun(runID int64) bool { return e.stopRun(runID) }

func (e *Engine) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

// signal wakes the claim loop without blocking.
func (e *Engine) signal() { e.cfg.Wake.Wake() }
