// Package jobs is the engine that keeps promises on time: it claims due
// jobs and sends scheduled messages verbatim through the Outbox (a lane
// per conversation, in due order), queues the turns of recurring jobs and
// of proactive follow-ups, and settles each job.
package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/engine/outbox"
	"github.com/parleybot/parley/internal/loop"
)

// Store is what the job loop reads and writes; core.Store documents each
// method.
type Store interface {
	Conversation(ctx context.Context, id int64) (core.Conversation, error)
	ClaimDueJobs(ctx context.Context, owner string, now, leaseUntil time.Time, kinds []core.JobKind, limit int, platforms ...core.Platform) ([]core.Job, error)
	NextJobDue(ctx context.Context, kinds []core.JobKind, platforms ...core.Platform) (*time.Time, error)
	ReleaseJob(ctx context.Context, id int64, owner string, status core.JobStatus, dueAt time.Time, note string) (bool, error)
	CompleteMessageJob(ctx context.Context, jobID int64, owner string, m *core.Message) (bool, error)
	FailJobAttempt(ctx context.Context, id int64, owner string, status core.JobStatus, dueAt time.Time, note string) (bool, error)
	StartCronTurn(ctx context.Context, job core.Job, owner string, c core.CronStart) (core.CronPlan, error)
	PlanJobRun(ctx context.Context, job core.Job, owner string, now, retryAt time.Time) (core.JobPlan, error)
}

// Config wires the engine; the composer (package engine) fills in every
// default.
type Config struct {
	Store    Store
	Outbox   *outbox.Outbox
	Logger   *slog.Logger
	Clock    core.Clock
	Owner    string
	Location *time.Location
	Metrics  core.Metrics
	// Kinds are the kinds of job this process serves; none: the loop does
	// not run, and jobs wait in the database for a process that does.
	Kinds []core.JobKind
	// Proactive is the follow-up policy; nil when none is enabled.
	Proactive core.ProactivePolicy
	// Wake wakes the job loop (a job was created); TurnWake the claim
	// loop (a job queued a run).
	Wake     *core.Waker
	TurnWake *core.Waker

	PollInterval   time.Duration
	JobLease       time.Duration
	LateGrace      time.Duration
	JobMaxAttempts int
	// Voice: with voice.replies always, scheduled messages are spoken too.
	Voice core.VoiceReplies
}

// Engine runs due jobs; see the package doc.
type Engine struct {
	cfg       Config
	log       *slog.Logger
	platforms []core.Platform
	// lanes send scheduled messages, a conversation's in order.
	lanes *lanes

	mu       sync.Mutex
	stopping bool
	// loop is the job loop, nil until Start and when this process
	// serves no kind of job; it sleeps without a goroutine (internal/loop).
	loop *loop.Loop
}

// New returns an engine over cfg.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg, log: cfg.Logger, platforms: cfg.Outbox.Platforms(), lanes: newLanes()}
}

// Start runs the job loop until ctx ends, if this process serves any kind
// of job.
func (e *Engine) Start(ctx context.Context) {
	if len(e.cfg.Kinds) == 0 {
		return
	}
	l := loop.Start(ctx, e.cfg.Clock, e.cfg.Wake, e.jobStep)
	e.mu.Lock()
	e.loop = l
	e.mu.Unlock()
}

// Drain makes the job loop stop at its next look.
func (e *Engine) Drain() {
	e.mu.Lock()
	e.stopping = true
	l := e.loop
	e.mu.Unlock()
	if l != nil {
		l.Stop()
	}
}

// Wait waits for the job loop and the sends in flight, once ctx of Start
// is done.
func (e *Engine) Wait() {
	e.mu.Lock()
	l := e.loop
	e.mu.Unlock()
	if l != nil {
		<-l.Done()
	}
	e.lanes.running.Wait()
}

func (e *Engine) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

// signal wakes the claim loop: a run was queued.
func (e *Engine) signal() { e.cfg.TurnWake.Wake() }
