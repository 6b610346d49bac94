package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/parleybot/parley/core/llm"
)

// DispatcherConfig wires a Dispatcher. Store, LLM and at least one adapter
// are required; every other field has a default.
type DispatcherConfig struct {
	Store    Store
	LLM      LLM
	Plugins  []Plugin
	Adapters []Adapter
	Logger   *slog.Logger
	// Clock defaults to the system clock.
	Clock Clock
	// Owner names this worker in claimed runs (default host-pid-random).
	Owner string
	// Location is the default zone for new conversations (default UTC).
	Location *time.Location
	// AllowUsers lists "platform:user_id"; empty allows everyone.
	AllowUsers []string
	// FailureMessage is sent when the model fails (default DefaultFailureMessage).
	FailureMessage string
	// BusyMessage is sent under BusyReject (default DefaultBusyMessage).
	BusyMessage string
	// Debounce delays a user turn after each message, so that a burst is
	// answered in one turn (default 0).
	Debounce time.Duration
	// DuringGeneration is what a message does while its conversation's turn
	// runs (default BusyQueue).
	DuringGeneration BusyPolicy
	// MaxToolRounds bounds tool rounds per turn (default: the LLM's own).
	MaxToolRounds int
	// HistoryLimit is how many recent messages a turn sees (default 50).
	HistoryLimit int
	// HistoryCacheSize is how many conversations' windows are kept in
	// memory (default 4096).
	HistoryCacheSize int
	// MaxTurns bounds the turns in flight at once (default
	// DefaultMaxTurns). A turn spends nearly all its time waiting on the
	// model, so this is not a CPU bound: it bounds memory (about
	// TurnMemory each), while the model client bounds requests in flight
	// (llm.max_concurrency).
	MaxTurns int
	// StaleAfter is when a running run without heartbeat is reaped (default 2m).
	StaleAfter time.Duration
	// HeartbeatInterval is how often running runs send a heartbeat
	// (default StaleAfter/4, at most 5s).
	HeartbeatInterval time.Duration
	// ReapInterval is how often stale runs are looked for (default
	// StaleAfter/4, at most 30s).
	ReapInterval time.Duration
	// TurnTimeout bounds one turn end to end (default 5m).
	TurnTimeout time.Duration
	// PollInterval is the fallback wake-up for runs planned by other
	// processes, and how often the job loop reads the next due time
	// (default 2s). On PostgreSQL a job due more than a minute ahead
	// notifies no one, so keep it under a minute.
	PollInterval time.Duration
	// TypingInterval is how often the typing indicator is refreshed (default 4s).
	TypingInterval time.Duration
	// JobMaxAttempts bounds the runs a proactive follow-up gets before it
	// is marked failed (scheduler.max_attempts, default 3).
	JobMaxAttempts int
	// ContinueNudge is the hidden user message that asks the model to go on
	// after a reply that wanted to say more (default DefaultContinueNudge).
	ContinueNudge string
	// ScheduledMessages makes this dispatcher send due message jobs
	// (scheduled private messages); off, they wait for one that does.
	ScheduledMessages bool
	// RecurringTurns makes this dispatcher run recurring jobs' turns
	// (schedule_recurring_turn); off, they wait for one that does.
	RecurringTurns bool
	// LateGrace is how late a scheduled message may still go out, or a
	// recurring job's missed occurrence still run, after downtime; older
	// ones are missed (scheduler.late_grace, default 24h).
	LateGrace time.Duration
	// JobLease is how long a claimed job is this process's before another
	// may take it over (scheduler.job_lease, default 1m).
	JobLease time.Duration
	// MaxSendsInDoubt is how many scheduled sends to one platform without
	// idempotent sends may be in doubt at once, each a duplicate should
	// this process die (scheduler.max_sends_in_doubt, default 4; see
	// doubt.go).
	MaxSendsInDoubt int
	// Media says what turns do with the files users send.
	Media MediaConfig
	// Metrics, when set, is told about turns, model calls, sends and jobs.
	Metrics Metrics
	// Listener, when set, tells this dispatcher when other processes queue
	// work (PostgreSQL's LISTEN/NOTIFY), so replicas need not wait for
	// their next poll.
	Listener WorkListener
	// Commands answers chat commands (/help, /new, …) without the model;
	// nil: none, and every /word is text for the model.
	Commands CommandHandler
	// JobWaker, when set, is what plugins that create jobs (the schedule
	// tools) call to wake the job loop, so a job due soon is not left to
	// the loop's next look (default: a waker of its own).
	JobWaker *Waker
	// Limits bound what one user may cost (bot.limits; default none).
	// With any set, Store must implement LimitStore. See limits.go.
	Limits UserLimits
}

// noMetrics records nothing.
type noMetrics struct{}

func (noMetrics) Fired(JobKind, time.Duration) {}

func (noMetrics) SendFailed(Platform) {}

func (noMetrics) Sent(Platform, string) {}

func (noMetrics) TurnFinished(RunKind, RunStatus, time.Duration) {}

func (noMetrics) ModelCalled(time.Duration, llm.Usage, error) {}

// Dispatcher is the core engine: it records inbound DMs, plans runs, and
// executes them with the enabled plugins over the LLM, replying through the
// adapter the conversation came from.
type Dispatcher struct {
	cfg      DispatcherConfig
	log      *slog.Logger
	adapters map[Platform]Adapter
	// platforms are the ones this dispatcher can deliver to; it claims
	// only their runs.
	platforms []Platform
	allow     map[string]bool
	history   *historyCache
	// media keeps opened files (images, documents' text) for the later
	// turns of a session.
	media   *mediaCache
	records *recordCache
	// limits come from the SessionPolicy plugin, or the defaults.
	limits SessionLimits
	// proactive is the ProactivePolicy plugin; nil when none is enabled.
	proactive ProactivePolicy
	// jobWake wakes the job loop early (a job was just created).
	jobWake *Waker
	// jobKinds are the kinds of job this dispatcher's job loop serves.
	jobKinds []JobKind
	// lanes send scheduled messages, a conversation's in order.
	lanes *lanes
	// limitStore counts usage for the per-user limits; nil when none is
	// set. limitExempt are the users they never apply to.
	limitStore  LimitStore
	limitExempt map[string]bool

	wake chan struct{}

	mu       sync.Mutex
	stopping bool
	// inflight cancels the turns this process executes, by run id.
	inflight   map[int64]context.CancelCauseFunc
	cancel     context.CancelFunc
	runCtx     context.Context
	loopDone   chan struct{}
	maintDone  chan struct{}
	jobsDone   chan struct{}
	listenDone chan struct{}
	turns      sync.WaitGroup
}

// NewDispatcher checks cfg and fills in defaults.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if cfg.Store == nil {
		return nil, errors.New("dispatcher: no store")
	}
	if cfg.LLM == nil {
		return nil, errors.New("dispatcher: no llm")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Owner == "" {
		cfg.Owner = newOwnerID()
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.FailureMessage == "" {
		cfg.FailureMessage = DefaultFailureMessage
	}
	limits := SessionLimits{Gap: DefaultSessionGap, WindowMessages: DefaultWindowMessages, WindowTokens: DefaultWindowTokens}
	var proactive ProactivePolicy
	for _, p := range cfg.Plugins {
		if sp, ok := p.(SessionPolicy); ok {
			l := sp.SessionLimits()
			if l.Gap > 0 {
				limits.Gap = l.Gap
			}
			if l.WindowMessages > 0 {
				limits.WindowMessages = l.WindowMessages
			}
			if l.WindowTokens > 0 {
				limits.WindowTokens = l.WindowTokens
			}
		}
		if pp, ok := p.(ProactivePolicy); ok {
			proactive = pp
		}
	}
	if cfg.HistoryLimit <= 0 {
		cfg.HistoryLimit = limits.WindowMessages
	}
	if cfg.JobMaxAttempts <= 0 {
		cfg.JobMaxAttempts = 3
	}
	if cfg.ContinueNudge == "" {
		cfg.ContinueNudge = DefaultContinueNudge
	}
	if cfg.JobWaker == nil {
		cfg.JobWaker = NewWaker()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.LateGrace <= 0 {
		cfg.LateGrace = 24 * time.Hour
	}
	if cfg.JobLease <= 0 {
		cfg.JobLease = time.Minute
	}
	if cfg.MaxSendsInDoubt <= 0 {
		cfg.MaxSendsInDoubt = 4
	}
	if cfg.HistoryCacheSize <= 0 {
		cfg.HistoryCacheSize = 4096
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = 2 * time.Minute
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = min(cfg.StaleAfter/4, 5*time.Second)
	}
	if cfg.ReapInterval <= 0 {
		cfg.ReapInterval = min(cfg.StaleAfter/4, 30*time.Second)
	}
	if cfg.BusyMessage == "" {
		cfg.BusyMessage = DefaultBusyMessage
	}
	switch cfg.DuringGeneration {
	case "":
		cfg.DuringGeneration = BusyQueue
	case BusyQueue, BusyReject, BusyRestart:
	default:
		return nil, fmt.Errorf("dispatcher: during_generation %q: want reject, queue or restart", cfg.DuringGeneration)
	}
	cfg.Media.Defaults()
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = 5 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 2 * time.Second
	}
	if cfg.TypingInterval <= 0 {
		cfg.TypingInterval = 4 * time.Second
	}
	d := &Dispatcher{
		cfg:      cfg,
		log:      cfg.Logger,
		adapters: map[Platform]Adapter{},
		allow:    map[string]bool{},
		wake:     make(chan struct{}, 1),
		inflight: map[int64]context.CancelCauseFunc{},
		history:  newHistoryCache(cfg.HistoryLimit, cfg.HistoryCacheSize),
		media:    newMediaCache(64 << 20),
		records:  newRecordCache(cfg.HistoryCacheSize),
		limits:   limits,
		jobWake:  cfg.JobWaker,
		lanes:    newLanes(),
	}
	d.proactive = proactive
	if proactive != nil {
		d.jobKinds = append(d.jobKinds, JobProactive)
	}
	if cfg.ScheduledMessages {
		d.jobKinds = append(d.jobKinds, JobMessage)
	}
	if cfg.RecurringTurns {
		d.jobKinds = append(d.jobKinds, JobAgentTurn)
	}
	for _, a := range cfg.Adapters {
		if prev, dup := d.adapters[a.Platform()]; dup {
			return nil, fmt.Errorf("dispatcher: adapters %q and %q both serve platform %s", prev.Name(), a.Name(), a.Platform())
		}
		d.adapters[a.Platform()] = a
		d.platforms = append(d.platforms, a.Platform())
	}
	if len(d.platforms) == 0 {
		return nil, errors.New("dispatcher: no adapter")
	}
	for _, u := range cfg.AllowUsers {
		d.allow[u] = true
	}
	var err error
	if d.limitStore, d.limitExempt, err = newLimits(cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// Start launches the claim loop. Runs left queued by an earlier process are
// picked up; runs whose worker died are reaped after StaleAfter.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		return errors.New("dispatcher: already started")
	}
	if n, retried, err := d.cfg.Store.ReapStaleRuns(ctx, d.cfg.Clock.Now().UTC(), d.cfg.Clock.Now().Add(-d.cfg.StaleAfter)); err != nil {
		return fmt.Errorf("reaping stale runs: %w", err)
	} else if n > 0 {
		d.log.Warn("failed runs left running by a stopped worker", "count", n, "user_turns_queued_again", retried)
	}
	d.reapPredecessors(ctx)
	// Turns outlive the caller's ctx on purpose: Stop decides when they end.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.runCtx, d.cancel = runCtx, cancel
	d.loopDone, d.maintDone, d.jobsDone = make(chan struct{}), make(chan struct{}), make(chan struct{})
	d.listenDone = make(chan struct{})
	go d.listen(runCtx)
	go d.claimLoop(runCtx)
	go d.maintain(runCtx)
	if d.cfg.ScheduledMessages {
		d.logSendsInDoubt()
	}
	if len(d.jobKinds) > 0 {
		go d.jobLoop(runCtx)
	} else {
		// Jobs wait in the database for a process that runs them.
		close(d.jobsDone)
	}
	return nil
}

// Stop stops claiming runs and waits for in-flight turns to finish until ctx
// is done, then cancels them. Inbound messages that arrive meanwhile are
// still stored and their runs stay queued for the next start.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	cancel := d.cancel
	d.mu.Unlock()
	if cancel == nil {
		return nil
	}
	d.signal() // the claim loop notices it is stopping
	done := make(chan struct{})
	go func() {
		<-d.loopDone
		d.turns.Wait()
		close(done)
	}()
	select {
	case <-done:
		cancel()
		<-d.maintDone
		<-d.jobsDone
		<-d.listenDone
		d.lanes.running.Wait()
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		<-d.maintDone
		<-d.jobsDone
		<-d.listenDone
		d.lanes.running.Wait()
		return fmt.Errorf("stopping dispatcher: in-flight turns cancelled: %w", ctx.Err())
	}
}

// History returns the newest limit messages of the conversation at
// (platform, channelThreadID), oldest first; none if it does not exist.
func (d *Dispatcher) History(ctx context.Context, p Platform, channelThreadID string, limit int) ([]Message, error) {
	conv, err := d.cfg.Store.ConversationByThread(ctx, p, channelThreadID)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finding conversation: %w", err)
	}
	msgs, err := d.cfg.Store.RecentMessages(ctx, conv.ID, limit)
	if err != nil {
		return nil, fmt.Errorf("reading history: %w", err)
	}
	return msgs, nil
}

func newOwnerID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
